// English and Simplified Chinese. The choice is kept in this browser (localStorage); the first
// visit follows the browser's language.

const en = {
  app: 'Hermes Cloud', console: 'Console', language: 'Language', theme: 'Theme', themeLight: 'Light', themeDark: 'Dark',
  themeAuto: 'System', signIn: 'Sign in', signOut: 'Sign out', email: 'Email', password: 'Password',
  signInTitle: 'Sign in to the console', signInHint: 'No password yet? Ask an operator for a one-time sign-in link.',
  wrongCredentials: 'Wrong email or password.', signingIn: 'Signing in…', linkTitle: 'Signing you in',
  linkInvalid: 'This link is unknown, already used or expired. Ask for a new one.', inviteTitle: 'Join a team',
  displayName: 'Your name', newPassword: 'Choose a password', passwordHint: 'At least 12 characters.',
  join: 'Join', tenants: 'Teams', yourTeams: 'Your teams', noTeams: 'You are not in any team yet.', role: 'Role',
  roles_owner: 'Owner', roles_admin: 'Admin', roles_member: 'Member (read-only)', operator: 'Operator',
  overview: 'Overview', members: 'Members', keys: 'API keys', tokens: 'Admin tokens', audit: 'Audit log',
  agents: 'Agents', sessions: 'Sessions', allTenants: 'All teams', createTenant: 'Create a team', name: 'Name',
  ownerEmail: "First owner's email", create: 'Create', created: 'Created', standing: 'Your role here',
  quotas: 'Quotas', rpm: 'Requests per minute', turns: 'Concurrent turns', default: 'installation default',
  invite: 'Invite', invitations: 'Invitations', inviteSomeone: 'Invite someone', inviteLink: 'Send this link to the invitee (it works once):',
  remove: 'Remove', revoke: 'Revoke', save: 'Save', cancel: 'Cancel', changeRole: 'Change role', status: 'Status',
  pending: 'pending', accepted: 'accepted', revoked: 'revoked', expires: 'Expires', lastUsed: 'Last used',
  prefix: 'Prefix', agent: 'Agent', anyAgent: 'every agent', newKey: 'New API key', newToken: 'New admin token',
  shownOnce: 'Copy it now: it is shown only this once.', service: 'Service token (belongs to the team)',
  days: 'Expires in days', when: 'When', who: 'Who', what: 'What', object: 'Object', change: 'Change', address: 'From',
  filterAction: 'Action starts with', filterActor: 'By', apply: 'Filter', exportCsv: 'Export CSV',
  exportJsonl: 'Export JSON lines', more: 'More', none: 'Nothing here yet.', model: 'Model', title: 'Title',
  messages: 'Messages', updated: 'Updated', source: 'Source', open: 'Open', transcript: 'Transcript',
  deleteSession: 'Delete session', confirmDelete: 'Delete this for good?', back: 'Back', readOnly: 'Read-only: your role cannot change anything here.',
  error: 'Something went wrong', sessionOver: 'Your session is over. Sign in again.', toolsets: 'Toolsets',
  provider: 'Provider', egress: 'Internet access', yes: 'yes', no: 'no', skipToContent: 'Skip to content',
  confirmRemove: 'Remove this member? Their access ends at once.', done: 'Done.', or: 'or',
  sso_cancelled: 'Single sign-on was cancelled.', sso_flow: 'That sign-in took too long or was not started here. Try again.',
  sso_provider: 'The identity provider could not be reached or refused. Try again, or ask an operator.',
  sso_token: 'The identity provider answered with a token that could not be trusted.',
  sso_unverified: 'The identity provider did not confirm your email address.',
  sso_no_account: 'There is no account for your email here yet. Ask your team for an invitation.',
  live: 'Live', liveTurn: 'Live turn', stop: 'Stop', stopping: 'stopping', stop_stopping: 'Stopping: the worker ends the turn now.',
  stop_cancelled: 'Cancelled before it started.', refresh: 'Refresh', noRunning: 'No turn is running.', input: 'Message',
  watching: 'watching…', running: 'running', waitingAnswer: 'waiting for an answer', stopped: 'stopped',
  failed: 'failed', completed: 'completed', ended: 'ended', memory: 'Memory', newAgent: 'New agent',
  providerUrl: 'Provider base URL', providerKey: 'Provider API key', writeOnly: 'Write-only: stored sealed, never shown again.',
  soul: 'SOUL (personality)', memoryHint: 'Entries are separated by a line holding only §. The agent\'s next turn sees what you save.',
  memoryDoc: 'MEMORY (the agent\'s notes)', userDoc: 'USER (what it knows of this person)', userKey: 'Chat user (platform:id)',
  saved: 'Saved', created_at: 'Created',
  usage: 'Usage', cost: 'Cost', tokenCount: 'Tokens', turnsCount: 'Turns', calls: 'Model calls', from: 'From', to: 'To',
  groupBy: 'Per', by_day: 'Day', by_agent: 'Agent', by_model: 'Model', by_source: 'Source', promptTokens: 'Input tokens',
  completionTokens: 'Output tokens', cachedTokens: 'Cached tokens', toolSeconds: 'Tool s', sandboxSeconds: 'Sandbox s',
  todayUsage: 'Today', openTurns: 'Turns running now',
  channels: 'Chat bots', noChannels: 'No bot is bound yet.', approve: 'Approve', approved: 'Approved: they may talk to the bot now.',
  mode: 'Mode', dmPolicy: 'Direct messages', waitingPairings: 'Waiting to be let in', noPairings: 'Nobody is waiting.',
  code: 'Code', confirmUnbind: 'Unbind this bot? It stops answering at once.', unbind: 'Unbind', platform: 'Platform',
  platform_telegram: 'Telegram', platform_slack: 'Slack', platform_wecom: 'WeCom (企业微信)', mode_poll: 'Long polling (no public URL needed)',
  mode_webhook: 'Webhook (the platform calls the gateway)', mode_socket: 'Socket Mode (no public URL needed)',
  mode_websocket: 'AI bot long connection (no public URL needed)', dm_pairing: 'Pairing: strangers get a code an admin approves',
  dm_open: 'Open: anyone', dm_allowlist: 'Allowlist only', dm_closed: 'Closed', botToken: 'Bot token',
  hintTelegramToken: 'From @BotFather: /newbot, then copy the token it sends (123456:ABC...).',
  hintSlackToken: 'The Bot User OAuth Token (xoxb-...) from OAuth & Permissions.', appToken: 'App-level token',
  hintSlackAppToken: 'From Basic Information, with connections:write (xapp-...).', signingSecret: 'Signing secret',
  publicUrl: 'Gateway public URL', hintPublicUrl: 'Where the platform reaches the gateway, such as https://chat.example.com.',
  botId: 'Bot ID', secret: 'Secret', corpId: 'Corp ID', wecomAgentId: 'AgentId', callbackToken: 'Callback Token',
  aesKey: 'EncodingAESKey', hintPairing: 'With pairing, a stranger who writes to the bot gets a code; approve it here.',
  checkingBot: 'Checking the bot with its platform…', bound: 'Bound', bindBot: 'Bind a bot', bind: 'Bind',
  memoryOff: 'This agent does not have the memory toolset: it neither sees nor writes these notes until it does.',
};

const zh = {
  app: 'Hermes Cloud', console: '控制台', language: '语言', theme: '主题', themeLight: '浅色', themeDark: '深色',
  themeAuto: '跟随系统', signIn: '登录', signOut: '退出登录', email: '邮箱', password: '密码',
  signInTitle: '登录控制台', signInHint: '还没有密码？请运维人员给你一个一次性登录链接。',
  wrongCredentials: '邮箱或密码错误。', signingIn: '正在登录…', linkTitle: '正在为你登录',
  linkInvalid: '该链接无效、已使用或已过期，请重新获取。', inviteTitle: '加入团队',
  displayName: '你的名字', newPassword: '设置密码', passwordHint: '至少 12 个字符。',
  join: '加入', tenants: '团队', yourTeams: '你的团队', noTeams: '你还没有加入任何团队。', role: '角色',
  roles_owner: '所有者', roles_admin: '管理员', roles_member: '成员（只读）', operator: '平台运维',
  overview: '概览', members: '成员', keys: 'API 密钥', tokens: '管理令牌', audit: '审计日志',
  agents: '智能体', sessions: '会话', allTenants: '全部团队', createTenant: '创建团队', name: '名称',
  ownerEmail: '首位所有者的邮箱', create: '创建', created: '创建时间', standing: '你在此的角色',
  quotas: '配额', rpm: '每分钟请求数', turns: '并发轮次', default: '使用安装默认值',
  invite: '邀请', invitations: '邀请', inviteSomeone: '邀请成员', inviteLink: '把此链接发给被邀请人（仅可使用一次）：',
  remove: '移除', revoke: '吊销', save: '保存', cancel: '取消', changeRole: '修改角色', status: '状态',
  pending: '待接受', accepted: '已接受', revoked: '已吊销', expires: '过期时间', lastUsed: '最近使用',
  prefix: '前缀', agent: '智能体', anyAgent: '所有智能体', newKey: '新建 API 密钥', newToken: '新建管理令牌',
  shownOnce: '请立即复制：它只显示这一次。', service: '服务令牌（属于团队）',
  days: '有效天数', when: '时间', who: '操作者', what: '操作', object: '对象', change: '变更', address: '来源',
  filterAction: '操作前缀', filterActor: '操作者', apply: '筛选', exportCsv: '导出 CSV',
  exportJsonl: '导出 JSON Lines', more: '更多', none: '这里还没有内容。', model: '模型', title: '标题',
  messages: '消息数', updated: '更新时间', source: '来源', open: '打开', transcript: '对话记录',
  deleteSession: '删除会话', confirmDelete: '确定永久删除？', back: '返回', readOnly: '只读：你的角色不能在此修改任何内容。',
  error: '出错了', sessionOver: '会话已结束，请重新登录。', toolsets: '工具集',
  provider: '模型服务', egress: '可访问互联网', yes: '是', no: '否', skipToContent: '跳到正文',
  confirmRemove: '确定移除该成员？其访问权限会立即失效。', done: '完成。', or: '或',
  sso_cancelled: '单点登录已取消。', sso_flow: '登录耗时过长或并非从此处发起，请重试。',
  sso_provider: '无法连接身份提供方或被其拒绝。请重试或联系运维人员。',
  sso_token: '身份提供方返回的令牌无法通过校验。',
  sso_unverified: '身份提供方未确认你的邮箱地址。',
  sso_no_account: '这里还没有与你邮箱对应的账号，请向团队申请邀请。',
  live: '实时', liveTurn: '实时轮次', stop: '停止', stopping: '正在停止', stop_stopping: '正在停止：工作节点会立即结束该轮次。',
  stop_cancelled: '尚未开始，已取消。', refresh: '刷新', noRunning: '当前没有运行中的轮次。', input: '消息',
  watching: '正在观察…', running: '运行中', waitingAnswer: '等待回答', stopped: '已停止',
  failed: '失败', completed: '已完成', ended: '已结束', memory: '记忆', newAgent: '新建智能体',
  providerUrl: '模型服务地址', providerKey: '模型服务 API 密钥', writeOnly: '只写：加密保存，之后不再显示。',
  soul: 'SOUL（人格设定）', memoryHint: '条目之间用仅含 § 的一行分隔。保存后，智能体的下一轮即可看到。',
  memoryDoc: 'MEMORY（智能体笔记）', userDoc: 'USER（对此用户的了解）', userKey: '聊天用户（平台:ID）',
  saved: '已保存', created_at: '创建时间',
  usage: '用量', cost: '费用', tokenCount: 'Token 数', turnsCount: '轮次', calls: '模型调用', from: '开始', to: '结束',
  groupBy: '分组', by_day: '按天', by_agent: '按智能体', by_model: '按模型', by_source: '按来源', promptTokens: '输入 Token',
  completionTokens: '输出 Token', cachedTokens: '缓存 Token', toolSeconds: '工具秒数', sandboxSeconds: '沙箱秒数',
  todayUsage: '今天', openTurns: '正在运行的轮次',
  channels: '聊天机器人', noChannels: '尚未绑定机器人。', approve: '批准', approved: '已批准：对方现在可以与机器人对话。',
  mode: '模式', dmPolicy: '私聊', waitingPairings: '等待放行', noPairings: '没有人在等待。',
  code: '配对码', confirmUnbind: '解绑此机器人？它会立即停止回复。', unbind: '解绑', platform: '平台',
  platform_telegram: 'Telegram', platform_slack: 'Slack', platform_wecom: '企业微信', mode_poll: '长轮询（无需公网地址）',
  mode_webhook: 'Webhook（平台回调网关）', mode_socket: 'Socket Mode（无需公网地址）',
  mode_websocket: '智能机器人长连接（无需公网地址）', dm_pairing: '配对：陌生人收到配对码，由管理员批准',
  dm_open: '开放：任何人', dm_allowlist: '仅白名单', dm_closed: '关闭', botToken: '机器人 Token',
  hintTelegramToken: '在 @BotFather 中 /newbot，然后复制它发来的 token（123456:ABC...）。',
  hintSlackToken: 'OAuth & Permissions 中的 Bot User OAuth Token（xoxb-...）。', appToken: '应用级 Token',
  hintSlackAppToken: '在 Basic Information 中生成，需 connections:write（xapp-...）。', signingSecret: '签名密钥',
  publicUrl: '网关公网地址', hintPublicUrl: '平台访问网关的地址，例如 https://chat.example.com。',
  botId: 'Bot ID', secret: 'Secret', corpId: '企业 ID', wecomAgentId: 'AgentId', callbackToken: '回调 Token',
  aesKey: 'EncodingAESKey', hintPairing: '开启配对后，陌生人给机器人发消息会收到配对码，在这里批准即可。',
  checkingBot: '正在向平台校验机器人…', bound: '已绑定', bindBot: '绑定机器人', bind: '绑定',
  memoryOff: '该智能体未启用 memory 工具集：启用前，它既看不到也不会写入这些笔记。',
};

const dictionaries = { en, zh };
export const LANGUAGES = [['en', 'English'], ['zh', '简体中文']];

export function currentLanguage() {
  const saved = localStorage.getItem('hermes.lang');
  if (saved && dictionaries[saved]) return saved;
  return (navigator.language || 'en').toLowerCase().startsWith('zh') ? 'zh' : 'en';
}

export function setLanguage(lang) {
  if (dictionaries[lang]) localStorage.setItem('hermes.lang', lang);
}

export function t(key) {
  const lang = currentLanguage();
  return dictionaries[lang][key] ?? en[key] ?? key;
}

export function roleName(role) {
  return t(`roles_${role}`) === `roles_${role}` ? role : t(`roles_${role}`);
}
