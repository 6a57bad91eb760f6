//! One tenant's flood cannot starve the others on a worker: a tenant holds at most its share of
//! the slots (`worker.tenant_share`), its other turns wait their turn in Postgres, and another
//! tenant's turn starts at once.

use serde_json::{Value, json};

use hermes_testkit::ScriptedReply;

use crate::harness::{Roles, TestEnv, wait_until};

fn ask(text: &str) -> Value {
    json!({"model": "ops", "messages": [{"role": "user", "content": text}]})
}

#[tokio::test]
async fn a_tenants_flood_runs_at_its_share_and_another_tenant_is_served_at_once() {
    let env = TestEnv::start_with(Roles::default(), |c| {
        c.worker.max_concurrent_turns = 4;
        c.worker.tenant_share = 0.5;
        c.worker.defer_millis = 200;
        crate::harness::no_api_limits(c);
    })
    .await;
    let [flood, quiet] = env.two_tenants(["flood", "quiet"], "ops").await;
    for _ in 0..7 {
        env.llm.push(ScriptedReply::text("done").after(std::time::Duration::from_millis(1500)));
    }
    let floods: Vec<_> = (0..6).map(|n| env.spawn_chat(&flood, ask(&format!("flood {n}")))).collect();
    wait_until("the flood holds its two slots", async || (env.llm.requests().len() >= 2).then_some(())).await;
    let quiet_turn = env.spawn_chat(&quiet, ask("quiet"));

    assert_eq!(quiet_turn.await.unwrap().status(), 200);
    for turn in floods {
        assert_eq!(turn.await.unwrap().status(), 200, "the flood's turns all run, at its pace");
    }
    let order: Vec<String> = env
        .llm
        .requests()
        .iter()
        .map(|r| r.messages().last().unwrap()["content"].as_str().unwrap_or_default().to_owned())
        .collect();
    let quiet_at = order.iter().position(|text| text == "quiet").unwrap();
    assert_eq!(quiet_at, 2, "the quiet tenant's turn starts beside the flood's share, not after it: {order:?}");
    env.stop().await;
}
