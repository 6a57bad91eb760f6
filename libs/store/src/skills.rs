//! Skills in Postgres (migration 0008): the bundled catalogue, tenant-wide skills and each
//! agent's own, with their supporting files. A name in a narrower scope shadows the wider one
//! (agent > tenant > bundled). Parsing and the security scan happen before anything reaches
//! here (`hermes_skills`); this module stores what it is given, keeps the index version that
//! workers cache by, and logs every change to an agent's skills.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::postgres::PgRow;
use sqlx::{FromRow, PgConnection, Row};
use uuid::Uuid;

use hermes_core::{AgentId, SkillId, TenantId};

use crate::admin::audited::tenant_writes;
use crate::{Result, views::Agents};

/// Where a skill comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SkillScope {
    Bundled,
    Tenant,
    Agent,
}

/// A stored skill (without its files).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct SkillRecord {
    #[sqlx(try_from = "crate::rows::Id")]
    pub id: SkillId,
    #[sqlx(flatten)]
    pub scope: SkillScope,
    pub name: String,
    pub category: String,
    pub description: String,
    pub skill_md: String,
    /// The parsed frontmatter (`hermes_skills::Skill` as JSON).
    pub meta: Value,
    pub content_hash: String,
    pub updated_at: DateTime<Utc>,
}

/// A skill as an agent sees it in its index.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct VisibleSkill {
    #[sqlx(flatten)]
    pub skill: SkillRecord,
    pub pinned: bool,
    /// The curator's verdict for this agent.
    #[sqlx(try_from = "String")]
    pub state: hermes_core::SkillState,
    pub view_count: i64,
    pub use_count: i64,
    pub last_used_at: Option<DateTime<Utc>>,
}

/// A skill to store.
#[derive(Debug, Clone)]
pub struct NewSkill {
    pub name: String,
    pub category: String,
    pub description: String,
    pub skill_md: String,
    pub meta: Value,
    pub content_hash: String,
    pub files: Vec<(String, String)>,
}

/// What a sync of the bundled catalogue changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SyncReport {
    pub added: usize,
    pub updated: usize,
    pub removed: usize,
}

pub(crate) const BUNDLED_SCOPE: Uuid = Uuid::nil();

macro_rules! skill_columns {
    () => {
        "s.id, s.tenant_id, s.agent_id, s.name, s.category, s.description, s.skill_md, s.meta, s.content_hash, s.updated_at"
    };
}

/// A skill's scope, from its `tenant_id` and `agent_id` columns (bundled skills have neither).
impl<'r> FromRow<'r, PgRow> for SkillScope {
    fn from_row(row: &'r PgRow) -> Result<Self, sqlx::Error> {
        let tenant: Option<Uuid> = row.try_get("tenant_id")?;
        let agent: Option<Uuid> = row.try_get("agent_id")?;
        Ok(match (tenant, agent) {
            (None, _) => SkillScope::Bundled,
            (Some(_), None) => SkillScope::Tenant,
            (Some(_), Some(_)) => SkillScope::Agent,
        })
    }
}

pub(crate) async fn bump_version(conn: &mut sqlx::PgConnection, scope: Uuid) -> Result<()> {
    sqlx::query(
        "INSERT INTO skill_versions (scope, version) VALUES ($1, 1)
         ON CONFLICT (scope) DO UPDATE SET version = skill_versions.version + 1",
    )
    .bind(scope)
    .execute(conn)
    .await?;
    Ok(())
}

/// Logs a change to `name` in `skill_events` (`action` by `actor`), in the caller's transaction.
pub(crate) async fn log_event(
    conn: &mut sqlx::PgConnection,
    tenant: TenantId,
    agent: Option<AgentId>,
    name: &str,
    action: &str,
    actor: &str,
    detail: &Value,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO skill_events (tenant_id, agent_id, name, action, actor, detail) VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(tenant.as_uuid())
    .bind(agent.map(|a| a.as_uuid()))
    .bind(name)
    .bind(action)
    .bind(actor)
    .bind(detail)
    .execute(conn)
    .await?;
    Ok(())
}

async fn insert_files(conn: &mut sqlx::PgConnection, skill: Uuid, files: &[(String, String)]) -> Result<()> {
    sqlx::query("DELETE FROM skill_files WHERE skill_id = $1").bind(skill).execute(&mut *conn).await?;
    let (paths, contents): (Vec<&str>, Vec<&str>) = files.iter().map(|(p, c)| (p.as_str(), c.as_str())).unzip();
    sqlx::query("INSERT INTO skill_files (skill_id, path, content) SELECT $1, p, c FROM UNNEST($2::text[], $3::text[]) AS f(p, c)")
        .bind(skill)
        .bind(&paths)
        .bind(&contents)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

macro_rules! upsert_skill_sql {
    ($conflict:literal) => {
        concat!(
            "INSERT INTO skills (id, tenant_id, agent_id, name, category, description, skill_md, meta, content_hash)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT ",
            $conflict,
            " DO UPDATE SET category = EXCLUDED.category, description = EXCLUDED.description,
                skill_md = EXCLUDED.skill_md, meta = EXCLUDED.meta, content_hash = EXCLUDED.content_hash,
                updated_at = now()
             RETURNING id"
        )
    };
}

/// Creates or replaces a skill in its scope (bundled: no tenant; tenant-wide: no agent), with
/// its files; returns its id.
async fn upsert_skill(
    conn: &mut sqlx::PgConnection,
    tenant: Option<TenantId>,
    agent: Option<AgentId>,
    skill: &NewSkill,
) -> Result<Uuid> {
    let sql = match (tenant, agent) {
        (None, _) => upsert_skill_sql!("(name) WHERE tenant_id IS NULL"),
        (Some(_), None) => upsert_skill_sql!("(tenant_id, name) WHERE tenant_id IS NOT NULL AND agent_id IS NULL"),
        (Some(_), Some(_)) => upsert_skill_sql!("(tenant_id, agent_id, name) WHERE agent_id IS NOT NULL"),
    };
    let id: Uuid = sqlx::query_scalar(sql)
        .bind(Uuid::now_v7())
        .bind(tenant.map(|t| t.as_uuid()))
        .bind(agent.filter(|_| tenant.is_some()).map(|a| a.as_uuid()))
        .bind(&skill.name)
        .bind(&skill.category)
        .bind(&skill.description)
        .bind(&skill.skill_md)
        .bind(&skill.meta)
        .bind(&skill.content_hash)
        .fetch_one(&mut *conn)
        .await?;
    insert_files(conn, id, &skill.files).await?;
    Ok(id)
}

impl Agents<'_> {
    /// Makes the bundled catalogue in Postgres equal to `catalogue` (added, changed and
    /// removed skills), in one transaction; every pod may run it at start-up.
    pub async fn sync_bundled_skills(self, catalogue: &[NewSkill]) -> Result<SyncReport> {
        let mut tx = self.system_pool().begin().await?;
        // One syncing pod at a time; the others then find nothing to do.
        sqlx::query("SELECT pg_advisory_xact_lock(hashtext('hermes-bundled-skills'))").execute(&mut *tx).await?;
        let existing: Vec<(String, String)> =
            sqlx::query_as("SELECT name, content_hash FROM skills WHERE tenant_id IS NULL").fetch_all(&mut *tx).await?;
        let mut report = SyncReport::default();
        for skill in catalogue {
            let known = existing.iter().find(|(name, _)| *name == skill.name);
            if known.is_some_and(|(_, hash)| *hash == skill.content_hash) {
                continue;
            }
            upsert_skill(&mut tx, None, None, skill).await?;
            if known.is_some() {
                report.updated += 1;
            } else {
                report.added += 1;
            }
        }
        let names: Vec<&str> = catalogue.iter().map(|s| s.name.as_str()).collect();
        report.removed = usize::try_from(
            sqlx::query("DELETE FROM skills WHERE tenant_id IS NULL AND name <> ALL($1)")
                .bind(&names)
                .execute(&mut *tx)
                .await?
                .rows_affected(),
        )
        .unwrap_or(0);
        if report != SyncReport::default() {
            bump_version(&mut tx, BUNDLED_SCOPE).await?;
        }
        tx.commit().await?;
        Ok(report)
    }

    /// The version of what `tenant`'s skills indexes show: (bundled, tenant). Workers rebuild
    /// a cached index only when it changes.
    pub async fn skill_index_version(self, tenant: TenantId) -> Result<(i64, i64)> {
        let rows: Vec<(Uuid, i64)> = sqlx::query_as("SELECT scope, version FROM skill_versions WHERE scope = ANY($1)")
            .bind([BUNDLED_SCOPE, tenant.as_uuid()])
            .fetch_all(&mut *self.as_tenant(tenant).await?)
            .await?;
        let of = |scope: Uuid| rows.iter().find(|(s, _)| *s == scope).map_or(0, |(_, v)| *v);
        Ok((of(BUNDLED_SCOPE), of(tenant.as_uuid())))
    }

    /// Every skill `agent` can see after shadowing (agent over tenant over bundled), with its
    /// usage; archived and disabled ones included (the caller filters).
    pub async fn visible_skills(self, tenant: TenantId, agent: AgentId) -> Result<Vec<VisibleSkill>> {
        let rows = sqlx::query(concat!(
            "SELECT DISTINCT ON (s.name) ",
            skill_columns!(),
            ", COALESCE(u.pinned, false) AS pinned, COALESCE(u.state, 'active') AS state,
               COALESCE(u.view_count, 0) AS view_count, COALESCE(u.use_count, 0) AS use_count, u.last_used_at
             FROM skills s
             LEFT JOIN skill_usage u ON u.tenant_id = $1 AND u.agent_id = $2 AND u.name = s.name
             WHERE s.tenant_id IS NULL OR (s.tenant_id = $1 AND (s.agent_id IS NULL OR s.agent_id = $2))
             ORDER BY s.name, (s.agent_id IS NOT NULL) DESC, (s.tenant_id IS NOT NULL) DESC"
        ))
        .bind(tenant.as_uuid())
        .bind(agent.as_uuid())
        .fetch_all(&mut *self.as_tenant(tenant).await?)
        .await?;
        rows.iter().map(crate::rows::read::<VisibleSkill>).collect()
    }

    /// The skill `name` as `agent` sees it (its own, else the tenant's, else the bundled one).
    pub async fn find_skill(self, tenant: TenantId, agent: AgentId, name: &str) -> Result<Option<SkillRecord>> {
        let row = sqlx::query(concat!(
            "SELECT ",
            skill_columns!(),
            " FROM skills s
             WHERE s.name = $3 AND (s.tenant_id IS NULL OR (s.tenant_id = $1 AND (s.agent_id IS NULL OR s.agent_id = $2)))
             ORDER BY (s.agent_id IS NOT NULL) DESC, (s.tenant_id IS NOT NULL) DESC LIMIT 1"
        ))
        .bind(tenant.as_uuid())
        .bind(agent.as_uuid())
        .bind(name)
        .fetch_optional(&mut *self.as_tenant(tenant).await?)
        .await?;
        row.as_ref().map(crate::rows::read::<SkillRecord>).transpose()
    }

    /// A skill's supporting files, by path (a bundled skill's, or one of `tenant`'s).
    pub async fn skill_files(self, tenant: TenantId, skill: SkillId) -> Result<Vec<(String, String)>> {
        Ok(sqlx::query_as("SELECT path, content FROM skill_files WHERE skill_id = $1 ORDER BY path")
            .bind(skill.as_uuid())
            .fetch_all(&mut *self.as_tenant(tenant).await?)
            .await?)
    }

    /// Writes `agent`'s own copy of a skill (creating or replacing it) with these files, logs
    /// the change and bumps the tenant's index version.
    pub async fn save_agent_skill(
        self,
        tenant: TenantId,
        agent: AgentId,
        skill: &NewSkill,
        action: &str,
        actor: &str,
    ) -> Result<()> {
        let mut tx = self.tenant_tx(tenant).await?;
        upsert_skill(&mut tx, Some(tenant), Some(agent), skill).await?;
        // A changed skill is a used skill: the curator starts counting again.
        sqlx::query(
            "INSERT INTO skill_usage (tenant_id, agent_id, name, last_used_at, state) VALUES ($1, $2, $3, now(), 'active')
             ON CONFLICT (tenant_id, agent_id, name) DO UPDATE SET last_used_at = now(), state = 'active',
                state_changed_at = CASE WHEN skill_usage.state <> 'active' THEN now() ELSE skill_usage.state_changed_at END",
        )
        .bind(tenant.as_uuid())
        .bind(agent.as_uuid())
        .bind(&skill.name)
        .execute(&mut *tx)
        .await?;
        log_event(
            &mut tx,
            tenant,
            Some(agent),
            &skill.name,
            action,
            actor,
            &serde_json::json!({"content_hash": skill.content_hash}),
        )
        .await?;
        bump_version(&mut tx, tenant.as_uuid()).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Deletes `agent`'s own skill `name`; `false` when it has none (a shared skill is hidden
    /// with [`Agents::disable_skill`](crate::views::Agents::disable_skill) instead).
    pub async fn delete_agent_skill(self, tenant: TenantId, agent: AgentId, name: &str, actor: &str) -> Result<bool> {
        let mut tx = self.tenant_tx(tenant).await?;
        let done = sqlx::query("DELETE FROM skills WHERE tenant_id = $1 AND agent_id = $2 AND name = $3")
            .bind(tenant.as_uuid())
            .bind(agent.as_uuid())
            .bind(name)
            .execute(&mut *tx)
            .await?;
        if done.rows_affected() == 0 {
            return Ok(false);
        }
        log_event(&mut tx, tenant, Some(agent), name, "delete", actor, &Value::Null).await?;
        bump_version(&mut tx, tenant.as_uuid()).await?;
        tx.commit().await?;
        Ok(true)
    }
}

tenant_writes! {
    in Agents;
    /// Hides a shared skill from `agent` (or shows it again).
    pub async fn disable_skill(agent: AgentId, name: &str, disabled: bool, actor: &str) -> Result<()>
        = disable_skill_on in transaction;

    /// Writes a tenant-wide skill (an administrator's import).
    pub async fn save_tenant_skill(skill: &NewSkill, actor: &str) -> Result<()> = save_tenant_skill_on in transaction;
}

/// [`Agents::disable_skill`](crate::views::Agents::disable_skill) on a connection already set to `tenant`.
async fn disable_skill_on(
    conn: &mut PgConnection,
    tenant: TenantId,
    agent: AgentId,
    name: &str,
    disabled: bool,
    actor: &str,
) -> Result<()> {
    let done = sqlx::query(
        "UPDATE agents SET disabled_skills = CASE WHEN $4
             THEN (SELECT array_agg(DISTINCT n) FROM unnest(array_append(disabled_skills, $3)) AS n)
             ELSE array_remove(disabled_skills, $3) END
         WHERE tenant_id = $1 AND id = $2",
    )
    .bind(tenant.as_uuid())
    .bind(agent.as_uuid())
    .bind(name)
    .bind(disabled)
    .execute(&mut *conn)
    .await?;
    crate::require_changed(&done)?;
    let action = if disabled { "disable" } else { "enable" };
    log_event(&mut *conn, tenant, Some(agent), name, action, actor, &Value::Null).await?;
    bump_version(&mut *conn, tenant.as_uuid()).await?;
    Ok(())
}

/// [`Agents::save_tenant_skill`](crate::views::Agents::save_tenant_skill) on a connection already set to `tenant`.
async fn save_tenant_skill_on(conn: &mut PgConnection, tenant: TenantId, skill: &NewSkill, actor: &str) -> Result<()> {
    upsert_skill(&mut *conn, Some(tenant), None, skill).await?;
    log_event(&mut *conn, tenant, None, &skill.name, "import", actor, &Value::Null).await?;
    bump_version(&mut *conn, tenant.as_uuid()).await?;
    Ok(())
}
