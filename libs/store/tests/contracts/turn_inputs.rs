//! A claimed turn's inputs, read on one connection: what the worker plans with, and only the
//! turn's own tenant's (a cap or goal of another tenant changes nothing).

use hermes_core::BudgetPeriod;
use hermes_store::Budget;
use sqlx::PgPool;

use crate::common;

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn a_turn_reads_its_agent_transcript_caps_and_goal_in_one_go(pool: PgPool) {
    let store = common::store(&pool);
    let t = common::tenant(&store, "acme").await;
    let other = common::tenant(&store, "globex").await;
    // The other tenant is capped and pursues a goal: none of that is this turn's.
    let cap = Budget { agent_id: None, period: BudgetPeriod::Day, hard_usd: Some(1.0), soft_usd: None };
    store.tenancy().set_budget(other.id, &cap).await.unwrap();
    store.conversations().set_goal(other.id, other.session, "ship it", 5).await.unwrap();

    common::queue(&store, &t, t.session, "hello").await;
    let turn = common::claim(&store, t.id, t.session, "w1", 1).await;
    let inputs = store.turns().turn_inputs(t.id, &turn).await.unwrap();
    assert_eq!(inputs.agent.id, t.agent);
    assert!(inputs.messages.is_empty(), "the input is stored when the turn begins, not before");
    assert!(inputs.pools.is_empty() && inputs.resolution.is_none() && inputs.grants.is_empty());
    assert!(!inputs.capped, "another tenant's cap does not cap this turn");
    assert!(!inputs.goal_active, "another tenant's goal is not this session's");
    assert!(inputs.memory.is_none(), "an agent without the memory toolset reads no memory");

    store.tenancy().set_budget(t.id, &cap).await.unwrap();
    store.conversations().set_goal(t.id, t.session, "answer well", 5).await.unwrap();
    let inputs = store.turns().turn_inputs(t.id, &turn).await.unwrap();
    assert!(inputs.capped, "a cap on the tenant covers its agent's calls");
    assert!(inputs.goal_active, "the session's active goal is seen");
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn memory_comes_with_the_first_turn_of_an_agent_that_keeps_it(pool: PgPool) {
    let store = common::store(&pool);
    let id = store.tenancy().create_tenant("acme").await.unwrap().id;
    let agent = common::new_agent("rememberer");
    let agent =
        store.agents().create_agent(id, hermes_store::NewAgent { toolsets: vec!["memory".into()], ..agent }, None);
    let agent = agent.await.unwrap().id;
    let session =
        store.conversations().create_session(id, agent, hermes_core::SessionSource::Api, "user-1", None).await.unwrap();
    let t = common::Tenant { id, agent, session };
    common::queue(&store, &t, session, "hello").await;
    let turn = common::claim(&store, id, session, "w1", 1).await;
    assert!(turn.system_prompt.is_none());
    let inputs = store.turns().turn_inputs(id, &turn).await.unwrap();
    assert!(inputs.memory.is_some(), "a session whose prompt is not frozen yet gets MEMORY and USER");
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn grants_and_skill_versions_come_with_the_inputs_and_only_the_tenants_own(pool: PgPool) {
    let store = common::store(&pool);
    let t = common::tenant(&store, "acme").await;
    let other = common::tenant(&store, "globex").await;
    let grant = "INSERT INTO approval_grants (tenant_id, agent_id, session_id, pattern_key) VALUES ($1, $2, $3, $4)";
    for (tenant, agent, session, key) in [
        (t.id, t.agent, None, "rm -rf"),
        (t.id, t.agent, Some(t.session), "curl"),
        (other.id, other.agent, None, "theirs"),
    ] {
        sqlx::query(grant)
            .bind(tenant.as_uuid())
            .bind(agent.as_uuid())
            .bind(session.map(|s: hermes_core::SessionId| s.as_uuid()))
            .bind(key)
            .execute(&pool)
            .await
            .unwrap();
    }
    store
        .agents()
        .save_tenant_skill(other.id, &crate::tenant_world::skill("their-notes", "theirs"), "admin")
        .await
        .unwrap();

    common::queue(&store, &t, t.session, "hello").await;
    let turn = common::claim(&store, t.id, t.session, "w1", 1).await;
    let inputs = store.turns().turn_inputs(t.id, &turn).await.unwrap();
    let grants: Vec<&str> = inputs.grants.iter().map(String::as_str).collect();
    assert_eq!(grants, ["curl", "rm -rf"], "the agent's and this session's grants, not another tenant's");
    assert_eq!(inputs.skill_versions, store.agents().skill_index_version(t.id).await.unwrap());
    assert_eq!(inputs.skill_versions.1, 0, "another tenant's skill does not move this tenant's index");

    store.agents().save_tenant_skill(t.id, &crate::tenant_world::skill("team-notes", "ours"), "admin").await.unwrap();
    let inputs = store.turns().turn_inputs(t.id, &turn).await.unwrap();
    assert_eq!(inputs.skill_versions, store.agents().skill_index_version(t.id).await.unwrap());
    assert!(inputs.skill_versions.1 > 0, "a new tenant skill moves the version a cached index is checked against");
}
