// Browser tests of the admin console: Playwright driving Debian's Chromium against a running
// Hermes Cloud. The world (URLs, a sign-in link, a member's password, a stale cookie) comes
// from tests/e2e/console.rs in $WORLD. Prints "N passed, M failed" and exits non-zero on any
// failure; screenshots of the main pages in English and Chinese go to world.screenshots.

import http from 'node:http';
import { chromium } from 'playwright-core';
import { base, expect, finish, step, world } from './steps.mjs';

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
    '--disable-sync', '--no-first-run', '--disable-quic'],
});

async function shot(page, name) {
  await page.screenshot({ path: `${world.screenshots}/${name}.png`, fullPage: true });
}

async function setLanguage(page, lang) {
  await page.evaluate((l) => localStorage.setItem('hermes.lang', l), lang);
}

const owner = await browser.newContext({ locale: 'en-US', viewport: { width: 1200, height: 800 } });
const ownerPage = await owner.newPage();
const errors = [];
ownerPage.on('pageerror', (e) => errors.push(String(e)));

await step('a one-time link signs the owner in, with a locked-down session cookie', async () => {
  await ownerPage.goto(world.owner_link);
  await ownerPage.waitForURL(`${base}/console`);
  await ownerPage.getByRole('heading', { name: 'Your teams' }).waitFor();
  expect(await ownerPage.getByRole('link', { name: 'acme' }).count() === 1, 'acme is listed');
  const cookie = (await owner.cookies()).find((c) => c.name === 'hermes_console');
  expect(cookie && cookie.httpOnly && cookie.secure && cookie.sameSite === 'Lax', `cookie flags: ${JSON.stringify(cookie)}`);
  expect(!ownerPage.url().includes('#'), 'the token is gone from the address bar');
});

const pages = (lang) => [
  ['overview', `/console/t/${world.tenant}`],
  ['members', `/console/t/${world.tenant}/members`],
  ['keys', `/console/t/${world.tenant}/keys`],
  ['audit', `/console/t/${world.tenant}/audit`],
  ['sessions', `/console/t/${world.tenant}/sessions`],
  ['usage', `/console/t/${world.tenant}/usage`],
  ['automation', `/console/t/${world.tenant}/automation`],
  ['approvals', `/console/t/${world.tenant}/approvals`],
  ['providers', `/console/t/${world.tenant}/providers`],
];

for (const [lang, membersLabel] of [['en', 'Members'], ['zh', '成员']]) {
  await step(`every page renders in ${lang}, with screenshots`, async () => {
    await setLanguage(ownerPage, lang);
    for (const [name, path] of pages(lang)) {
      await ownerPage.goto(`${base}${path}`);
      await ownerPage.getByRole('link', { name: membersLabel }).waitFor();
      // The page's own content, which its API calls bring after the tab bar.
      await ownerPage.locator('main section > *').first().waitFor();
      expect(await ownerPage.getByRole('alert').count() === 0, `${name} shows no error`);
      await shot(ownerPage, `${name}-${lang}`);
    }
    await ownerPage.goto(`${base}/console/t/${world.tenant}/sessions`);
    await ownerPage.locator('main table a').first().click();
    await ownerPage.locator('[data-testid=message]').first().waitFor();
    await shot(ownerPage, `transcript-${lang}`);
    expect(await ownerPage.evaluate(() => document.documentElement.lang) === (lang === 'zh' ? 'zh-CN' : 'en'), 'lang set');
  });
}

await step('XSS payloads in a transcript show as text and do nothing', async () => {
  const main = ownerPage.locator('main');
  expect(await main.getByText("<script>window.__pwned = 'script'</script>").count() >= 1, 'the script tag shows as text');
  expect(await main.getByText('onerror=').count() >= 1, 'the img tag shows as text');
  expect(await ownerPage.evaluate(() => window.__pwned) === undefined, 'no payload ran');
  expect(await main.locator('script, img, iframe').count() === 0, 'no element was made from the text');
  expect(await ownerPage.locator('a[href^="javascript:"]').count() === 0, 'no javascript: link');
  await setLanguage(ownerPage, 'en');
});

let apiKey = '';
await step('the owner makes an API key in the console and it works on the API', async () => {
  await ownerPage.goto(`${base}/console/t/${world.tenant}/keys`);
  await ownerPage.getByLabel('Name').fill('browser key');
  await ownerPage.getByRole('button', { name: 'Create' }).click();
  apiKey = (await ownerPage.getByTestId('secret').textContent()).trim();
  expect(apiKey.startsWith('hk_'), `a key is shown: ${apiKey}`);
  const models = await fetch(`${base}/v1/models`, { headers: { authorization: `Bearer ${apiKey}` } });
  expect(models.status === 200, `the key works: ${models.status}`);
});

await step('the owner makes a key whose calls may use only some toolsets', async () => {
  await ownerPage.goto(`${base}/console/t/${world.tenant}/keys`);
  await ownerPage.getByLabel('Name').fill('narrow key');
  await ownerPage.getByLabel('Toolsets its calls may use: only these').check();
  const picked = ownerPage.getByTestId('key-toolsets');
  await picked.getByRole('checkbox', { name: 'memory', exact: true }).check();
  await ownerPage.getByRole('button', { name: 'Create' }).click();
  expect((await ownerPage.getByTestId('secret').textContent()).trim().startsWith('hk_'), 'the narrow key is shown once');
  await ownerPage.reload();
  const row = await ownerPage.getByRole('row', { name: /narrow key/ }).textContent();
  expect(row.includes('memory') && !row.includes('terminal'), `the key's row names its toolsets: ${row}`);
});

async function script(replies) {
  const resp = await fetch(`${world.llm.replace(/\/v1$/, '')}/__script`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(replies),
  });
  expect(resp.status === 204, `the model is scripted: ${resp.status}`);
}

await step('the owner creates an agent, calls it with the key and watches the turn live, then stops it', async () => {
  await ownerPage.goto(`${base}/console/t/${world.tenant}/agents`);
  await ownerPage.getByLabel('Name').fill('scribe');
  await ownerPage.getByLabel('Model').fill('scripted-model');
  await ownerPage.getByLabel('Provider base URL').fill(world.llm);
  // The installation's defaults come checked; a toolset whose service it lacks says which.
  const toolsets = ownerPage.getByTestId('toolsets');
  const box = (name) => toolsets.getByRole('checkbox', { name, exact: true });
  expect(await box('terminal').isChecked() && await box('memory').isChecked(), 'the base set is checked');
  expect(!(await box('web').isChecked()), 'no search service here: web is not a default');
  const webHint = await toolsets.locator('#toolset-web-hint').textContent();
  expect(webHint.includes('needs the operator to configure a web search service'), `web says what it needs: ${webHint}`);
  expect(await box('web').isEnabled(), "still selectable: a team's own key may serve it");
  await box('delegation').uncheck();
  await ownerPage.getByRole('button', { name: 'Create' }).click();
  await ownerPage.getByRole('cell', { name: 'scribe', exact: true }).waitFor();
  const listed = await ownerPage.getByRole('row', { name: /scribe/ }).textContent();
  expect(listed.includes('terminal') && !listed.includes('delegation') && !listed.includes('web'), `the checked toolsets: ${listed}`);

  // A tool call, then an answer that takes its time: long enough to watch and stop.
  await script([
    { kind: 'tool_calls', calls: [['terminal', { command: 'echo from-the-sandbox' }]] },
    { kind: 'text', text: 'a slow answer', latency_ms: 30000 },
  ]);
  const call = fetch(`${base}/v1/chat/completions`, {
    method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'scribe', messages: [{ role: 'user', content: 'run something slow' }] }),
  });
  await ownerPage.goto(`${base}/console/t/${world.tenant}/live`);
  for (let i = 0; i < 40 && await ownerPage.getByRole('link', { name: 'run something slow' }).count() === 0; i += 1) {
    await ownerPage.waitForTimeout(250);
    await ownerPage.reload();
  }
  await ownerPage.getByRole('link', { name: 'run something slow' }).click();
  await ownerPage.getByTestId('live-tools').getByText('✓').waitFor({ timeout: 20000 });
  await shot(ownerPage, 'live-en');
  await ownerPage.getByRole('button', { name: 'Stop' }).click();
  await ownerPage.getByTestId('live-state').getByText('stopped').waitFor({ timeout: 20000 });
  const answered = await call;
  expect(answered.status === 200 || answered.status >= 400, `the API call ended: ${answered.status}`);
});

await step("the owner corrects the agent's memory and its next turn sees it", async () => {
  await ownerPage.goto(`${base}/console/t/${world.tenant}/agents`);
  await ownerPage.getByRole('row', { name: /scribe/ }).getByRole('link', { name: 'Memory' }).click();
  await ownerPage.getByTestId('memory-memory').fill('The team deploys on Thursdays.\n§\nThe staging host is called kestrel.');
  await ownerPage.getByRole('button', { name: 'Save' }).first().click();
  await ownerPage.getByText('Saved (2)').waitFor();
  await script([{ kind: 'text', text: 'Thursday.' }]);
  const resp = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'scribe', messages: [{ role: 'user', content: 'When do we deploy?' }] }),
  });
  expect(resp.status === 200, `answered: ${resp.status}`);
  const seen = await (await fetch(`${world.llm.replace(/\/v1$/, '')}/__requests`)).json();
  const prompt = JSON.stringify(seen[seen.length - 1].messages.filter((m) => m.role === 'system'));
  expect(prompt.includes('The team deploys on Thursdays.') && prompt.includes('kestrel'), `the prompt carries the memory: ${prompt.slice(0, 400)}`);
});

await step("the owner edits an agent's SOUL and approvals", async () => {
  await ownerPage.goto(`${base}/console/t/${world.tenant}/agents`);
  await ownerPage.getByRole('link', { name: 'scribe', exact: true }).click();
  await ownerPage.getByLabel('SOUL (personality)').fill('You are a careful scribe.');
  await ownerPage.getByLabel('Dangerous commands').selectOption('smart');
  await ownerPage.getByLabel('OpenRouter providers to try first, in order').fill('anthropic, google-vertex');
  await ownerPage.getByLabel('OpenRouter ranks providers by').selectOption('throughput');
  await ownerPage.getByLabel('Providers that may keep prompts').selectOption('deny');
  await ownerPage.getByRole('button', { name: 'Save' }).click();
  await ownerPage.getByText('Saved').waitFor();
  await shot(ownerPage, 'agent-en');
  const routing = await ownerPage.evaluate(async (tenant) => {
    const agents = await (await fetch(`/admin/v1/tenants/${tenant}/agents`)).json();
    return agents.data.find((a) => a.name === 'scribe').provider_routing;
  }, world.tenant);
  expect(JSON.stringify(routing) === '{"order":["anthropic","google-vertex"],"sort":"throughput","data_collection":"deny"}', `the routing is saved: ${JSON.stringify(routing)}`);
});

await step("the owner adds an MCP server to an agent, its header never shown again, then removes it", async () => {
  await ownerPage.goto(`${base}/console/t/${world.tenant}/agents`);
  await ownerPage.getByRole('link', { name: 'scribe', exact: true }).click();
  await ownerPage.getByLabel('Name', { exact: true }).last().fill('tracker');
  const config = ownerPage.getByLabel('Configuration (JSON)');
  await config.fill('{"url": "https://mcp.tracker.example/mcp"');
  await ownerPage.getByRole('button', { name: 'Add or replace a server' }).click();
  await ownerPage.getByText('The configuration is not valid JSON.').waitFor();
  await config.fill('{"url": "https://mcp.tracker.example/mcp", "headers": {"Authorization": "Bearer sk-console-4b1d9e"}, "sampling": {"enabled": true}}');
  await ownerPage.getByRole('button', { name: 'Add or replace a server' }).click();
  const row = ownerPage.getByRole('row', { name: /tracker/ });
  await row.waitFor();
  expect((await row.textContent()).includes('https://mcp.tracker.example/mcp'), 'the server is listed with its URL');
  expect(!(await ownerPage.content()).includes('sk-console-4b1d9e'), 'the header value is never sent back');
  await shot(ownerPage, 'agent-mcp-en');
  ownerPage.once('dialog', (d) => d.accept());
  await row.getByRole('button', { name: 'Remove: tracker' }).click();
  await ownerPage.getByRole('row', { name: /tracker/ }).waitFor({ state: 'detached' });
});

await step("the owner binds a team key to an agent's sandboxes as a variable, never seeing the key", async () => {
  await ownerPage.goto(`${base}/console/t/${world.tenant}/agents`);
  await ownerPage.getByRole('link', { name: 'scribe', exact: true }).click();
  const secrets = ownerPage.getByTestId('secrets');
  await secrets.getByLabel('Variable').fill('GITHUB_TOKEN');
  await secrets.getByLabel('Team key').selectOption('gh');
  await secrets.getByLabel('Required header').fill('authorization');
  await secrets.getByRole('button', { name: 'Bind a key' }).click();
  const row = ownerPage.getByRole('row', { name: /GITHUB_TOKEN/ });
  await row.waitFor();
  expect((await row.textContent()).includes('api.github.com'), 'the binding shows where the key may go');
  expect(!(await ownerPage.content()).includes('ghp_console_team_key'), 'the key is never sent here');
});

await step("the owner uploads a team skill and hides it from an agent", async () => {
  await ownerPage.goto(`${base}/console/t/${world.tenant}/agents`);
  await ownerPage.getByRole('row', { name: /scribe/ }).getByRole('link', { name: 'Skills' }).click();
  await ownerPage.getByLabel('SKILL.md').fill('---\nname: standup-notes\ndescription: How we write standup notes.\n---\n\nThree bullets: done, doing, blocked.\n');
  await ownerPage.getByRole('button', { name: 'Save' }).click();
  const row = ownerPage.getByRole('row', { name: /standup-notes/ });
  await row.waitFor();
  await row.getByRole('button', { name: 'Hide from this agent' }).click();
  await ownerPage.getByRole('row', { name: /standup-notes/ }).getByRole('button', { name: 'Show again' }).waitFor();
  await ownerPage.getByRole('button', { name: 'standup-notes' }).click();
  await ownerPage.getByTestId('skill-md').getByText('Three bullets').waitFor();
  await shot(ownerPage, 'skills-en');
});

await step('usage shows what the turns cost, per day and per model', async () => {
  await ownerPage.goto(`${base}/console/t/${world.tenant}/usage?by=model`);
  await ownerPage.getByRole('cell', { name: 'scripted-model', exact: true }).waitFor();
  const calls = await ownerPage.getByRole('row', { name: /scripted-model/ }).getByRole('cell').nth(1).textContent();
  expect(Number(calls.replace(/[^0-9]/g, '')) >= 3, `the turns' model calls are counted: ${calls}`);
});

await step('the owner finds a conversation by what was said in it', async () => {
  await ownerPage.goto(`${base}/console/t/${world.tenant}/sessions`);
  await ownerPage.getByLabel('Words said').fill('deploy');
  await ownerPage.getByLabel('Agent').selectOption('scribe');
  await ownerPage.getByRole('button', { name: 'Search' }).click();
  await ownerPage.waitForURL(/q=deploy/);
  const rows = ownerPage.getByTestId('session-row');
  await rows.first().waitFor();
  const texts = await rows.allTextContents();
  expect(texts.length >= 1 && texts.every((t) => /deploy/i.test(t)), `only matching sessions: ${JSON.stringify(texts)}`);
  await shot(ownerPage, 'session-search-en');
});

await step('the owner sets a daily spending cap and the overview shows the spend against it', async () => {
  await ownerPage.goto(`${base}/console/t/${world.tenant}/usage`);
  await ownerPage.getByLabel('For').selectOption('tenant');
  await ownerPage.getByLabel('Period').selectOption('day');
  await ownerPage.getByLabel('Hard cap (USD)').fill('100');
  await ownerPage.getByRole('button', { name: 'Set cap' }).click();
  await ownerPage.getByTestId('budget').first().waitFor();
  expect((await ownerPage.getByTestId('budget').first().textContent()).includes('$100'), 'the cap is listed');
  await ownerPage.goto(`${base}/console/t/${world.tenant}`);
  const spend = await ownerPage.getByTestId('spend-today').textContent();
  expect(spend.includes('/ $100'), `spend against the cap: ${spend}`);
  await ownerPage.goto(`${base}/console/t/${world.tenant}/usage`);
  await ownerPage.getByTestId('budget').first().getByRole('button', { name: /Remove/ }).click();
  await ownerPage.getByText('No caps: turns spend without limit.').waitFor();
});

await step("an operator sees the cluster with the workers' sandboxes and sets a team's quotas", async () => {
  const ops = await browser.newContext({ locale: 'en-US', viewport: { width: 1200, height: 800 } });
  const page = await ops.newPage();
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(world.operator_link);
  await page.getByRole('heading', { name: 'Sandboxes' }).waitFor();
  const sandboxes = await page.getByTestId('sandboxes').textContent();
  expect(sandboxes.includes('hermes-sbx-reported') && sandboxes.includes('worker-browser'), `the reported sandbox: ${sandboxes}`);
  await shot(page, 'cluster-en');
  await page.goto(`${base}/console/t/${world.tenant}`);
  await page.getByLabel('Requests per minute').fill('600');
  await page.getByRole('button', { name: 'Save' }).click();
  await page.waitForFunction(() => document.querySelector('main dl.facts')?.textContent.includes('600'));
  // The team's own identity provider, for its email domain.
  await page.goto(`${base}/console/t/${world.tenant}/members`);
  await page.getByLabel('Issuer URL').fill(world.idp.issuer);
  await page.getByLabel('Client ID').fill(world.idp.client_id);
  await page.getByLabel('Client secret').fill(world.idp.client_secret);
  await page.getByLabel('Email domains').fill('acme.test');
  await page.getByLabel('New people at these domains join as').selectOption('member');
  await page.getByRole('button', { name: 'Save' }).click();
  await page.getByTestId('team-sso').getByText('acme.test').waitFor();
  await shot(page, 'team-sso-en');
  await ops.close();
});

await step('the owner binds a Telegram bot step by step and lets a stranger in', async () => {
  await ownerPage.goto(`${base}/console/t/${world.tenant}/channels`);
  await ownerPage.getByLabel('Platform').selectOption('telegram');
  await ownerPage.getByLabel('Bot token').fill(world.telegram_token);
  await ownerPage.getByLabel('Agent').selectOption({ label: 'helper' });
  await ownerPage.getByRole('button', { name: 'Bind', exact: true }).click();
  await ownerPage.getByText('Bound @ConsoleBot').waitFor({ timeout: 20000 });
  // The stranger writes to the bot and gets a code; the admin sees them waiting.
  for (let i = 0; i < 60; i += 1) {
    await ownerPage.goto(`${base}/console/t/${world.tenant}/channels`);
    if (await ownerPage.getByRole('button', { name: /^Approve/ }).count() > 0) break;
    await ownerPage.waitForTimeout(500);
  }
  await shot(ownerPage, 'channels-en');
  await ownerPage.getByRole('button', { name: /^Approve/ }).click();
  await ownerPage.getByText('Approved: they may talk to the bot now.').waitFor();
});

await step("the owner keeps the bot's groups to memory, and one team chat to the terminal", async () => {
  await ownerPage.goto(`${base}/console/t/${world.tenant}/channels`);
  const tools = ownerPage.getByTestId('tools-here').first();
  await tools.getByLabel('Groups and channels: only these').check();
  await tools.getByTestId(/-groups$/).getByRole('checkbox', { name: 'memory', exact: true }).check();
  await tools.getByLabel('Rules for single chats').fill('-100team: terminal');
  await tools.getByRole('button', { name: 'Save' }).click();
  await tools.getByText('Saved').waitFor();
  await ownerPage.reload();
  const again = ownerPage.getByTestId('tools-here').first();
  expect(await again.getByLabel('Groups and channels: only these').isChecked(), 'the groups rule is kept');
  expect(!(await again.getByLabel('Direct messages: only these').isChecked()), 'direct messages keep every toolset');
  expect((await again.getByLabel('Rules for single chats').inputValue()) === '-100team: terminal', 'the chat rule is kept');
  await shot(ownerPage, 'channel-tools-en');
});

let inviteLink = '';
await step('the owner invites someone and the invitee joins from the link', async () => {
  await ownerPage.goto(`${base}/console/t/${world.tenant}/members`);
  await ownerPage.getByLabel('Email', { exact: true }).fill('newt@acme.test');
  await ownerPage.getByRole('button', { name: 'Invite', exact: true }).click();
  inviteLink = (await ownerPage.getByTestId('invite-link').textContent()).trim();
  expect(inviteLink.startsWith(`${base}/console/invite#`), inviteLink);
  const invitee = await browser.newContext({ locale: 'zh-CN' });
  const page = await invitee.newPage();
  await page.goto(inviteLink);
  await page.getByLabel('你的名字').fill('Newt');
  await page.getByLabel('设置密码').fill('newt long passphrase');
  await page.getByRole('button', { name: '加入' }).click();
  await page.waitForURL(`${base}/console`);
  await page.getByRole('link', { name: 'acme' }).waitFor();
  await invitee.close();
});

const member = await browser.newContext({ locale: 'en-US' });
const memberPage = await member.newPage();
await step('a member signs in with a password and sees no controls that change anything', async () => {
  await memberPage.goto(`${base}/console`);
  await memberPage.waitForURL(/\/console\/sign-in/);
  await memberPage.getByLabel('Email', { exact: true }).fill(world.member_email);
  await memberPage.getByLabel('Password').fill(world.member_password);
  await memberPage.getByRole('button', { name: 'Sign in' }).click();
  await memberPage.waitForURL(`${base}/console`);
  await memberPage.goto(`${base}/console/t/${world.tenant}/members`);
  await memberPage.getByRole('note').waitFor();
  expect(await memberPage.getByRole('button').filter({ hasNotText: 'Sign out' }).count() === 0, 'no buttons but signing out');
  expect(await memberPage.locator('main select').count() === 0, 'no role pickers');
  expect(await memberPage.getByRole('link', { name: 'Audit log' }).count() === 0, 'no audit tab');
  await memberPage.goto(`${base}/console/t/${world.tenant}/keys`);
  expect(await memberPage.getByRole('heading', { name: 'New API key' }).count() === 0, 'no key form');
  await memberPage.goto(`${base}/console/t/${world.tenant}/agents`);
  await memberPage.getByRole('link', { name: 'scribe', exact: true }).click();
  const terminal = memberPage.getByTestId('toolsets').getByRole('checkbox', { name: 'terminal', exact: true });
  expect(await terminal.isChecked() && await terminal.isDisabled(), "the agent's toolsets shown, not changeable");
  await memberPage.goto(`${base}/console/t/${world.tenant}/channels`);
  const rules = memberPage.getByTestId('tools-here').first();
  expect(await rules.getByLabel('Groups and channels: only these').isDisabled(), "the bot's rules shown, not changeable");
  expect(await rules.getByRole('button', { name: 'Save' }).count() === 0, 'no save for a member');
});

await step('the API refuses a member who writes anyway, with the right CSRF token', async () => {
  const status = await memberPage.evaluate(async (tenant) => {
    const me = await (await fetch('/admin/v1/me')).json();
    const resp = await fetch(`/admin/v1/tenants/${tenant}/keys`, {
      method: 'POST', headers: { 'content-type': 'application/json', 'x-csrf-token': me.csrf_token },
      body: JSON.stringify({ name: 'sneaky' }),
    });
    return resp.status;
  }, world.tenant);
  expect(status === 403, `refused: ${status}`);
});

await step("another tenant's URL finds nothing", async () => {
  await memberPage.goto(`${base}/console/t/${world.other_tenant}/members`);
  const alert = memberPage.getByRole('alert');
  await alert.waitFor();
  expect((await alert.textContent()).includes('no such tenant'), await alert.textContent());
});

await step('a forged cross-site POST is refused and changes nothing', async () => {
  const target = `${base}/admin/v1/tenants/${world.tenant}/invitations`;
  const attack = `<!doctype html><form method="POST" action="${target}" enctype="text/plain">
    <input name='{"email":"eve@evil.test","role":"owner","pad":"' value='"}'></form>
    <script>
      fetch(${JSON.stringify(target)}, { method: 'POST', mode: 'no-cors', credentials: 'include',
        headers: { 'content-type': 'text/plain' }, body: '{"email":"eve@evil.test","role":"owner"}' })
        .finally(() => document.forms[0].submit());
    </script>`;
  const server = http.createServer((_, res) => { res.writeHead(200, { 'content-type': 'text/html' }); res.end(attack); });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = server.address().port;
  try {
    // Same site (another port of the same host: the cookie is sent) and cross site.
    for (const origin of [`http://127.0.0.1:${port}`, `http://localhost:${port}`]) {
      const page = await owner.newPage();
      await page.goto(`${origin}/`);
      await page.waitForTimeout(800);
      await page.close();
    }
  } finally {
    server.close();
  }
  const invited = await ownerPage.evaluate(async (tenant) => {
    const list = await (await fetch(`/admin/v1/tenants/${tenant}/invitations`)).json();
    return list.data.map((i) => i.email);
  }, world.tenant);
  expect(!invited.includes('eve@evil.test'), `no invitation for eve: ${invited}`);
});

await step('an expired session lands on the sign-in page', async () => {
  const stale = await browser.newContext({ locale: 'en-US' });
  const [name, value] = world.stale_cookie.split('=');
  await stale.addCookies([{ name, value, url: base }]);
  const page = await stale.newPage();
  await page.goto(`${base}/console/t/${world.tenant}/members`);
  await page.waitForURL(/\/console\/sign-in/);
  await page.getByRole('heading', { name: 'Sign in to the console' }).waitFor();
  await stale.close();
});

await step("single sign-on: the installation's provider sends a team's domain to the team's own, which signs the owner in", async () => {
  const sso = await browser.newContext({ locale: 'en-US' });
  const page = await sso.newPage();
  await page.goto(`${base}/console/t/${world.tenant}/members`);
  await page.waitForURL(/\/console\/sign-in/);
  await shot(page, 'sign-in-en');
  await page.getByRole('link', { name: 'Single sign-on' }).click();
  await page.waitForURL(/sso_error=team_provider/);
  await page.getByText("People of your email domain sign in through their team's single sign-on").waitFor();
  await sso.close();
  // And through the team's own provider, found by the work email's domain.
  const work = await browser.newContext({ locale: 'en-US' });
  const workPage = await work.newPage();
  await workPage.goto(`${base}/console/sign-in`);
  await workPage.getByLabel('Work email').fill('owner@acme.test');
  await workPage.getByRole('button', { name: 'Continue with single sign-on' }).click();
  await workPage.waitForURL(`${base}/console`);
  await workPage.getByRole('link', { name: 'acme' }).waitFor();
  await work.close();
});

await step('signing out ends the session', async () => {
  await ownerPage.goto(`${base}/console`);
  await ownerPage.getByRole('button', { name: 'Sign out' }).click();
  await ownerPage.waitForURL(/\/console\/sign-in/);
  const me = await ownerPage.evaluate(async () => (await fetch('/admin/v1/me')).status);
  expect(me === 401, `signed out: ${me}`);
});

process.exitCode = await finish(browser, errors);
