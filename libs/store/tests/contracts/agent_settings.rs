//! An agent's settings that live beside its profile: how its model is shown images, and the
//! model that describes them.

use sqlx::PgPool;

use crate::common;

/// An agent's vision settings: new agents decide from the model; the mode and the vision model
/// change apart, and the model can be taken away again.
#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn an_agents_image_mode_and_vision_model_are_set_and_cleared_apart(pool: PgPool) {
    use hermes_core::ImageInputMode;
    let store = common::store(&pool);
    let t = common::tenant(&store, "acme").await;
    let fresh = store.agents().agent(t.id, t.agent).await.unwrap();
    assert_eq!((fresh.image_input_mode, fresh.shown.vision_model), (ImageInputMode::Auto, None));

    let eye =
        hermes_store::ModelRef { base_url: "https://vision.test/v1".into(), model: "eye-1".into(), api_mode: None };
    store.agents().set_vision(t.id, t.agent, None, Some(Some(&eye))).await.unwrap();
    let with_model = store.agents().agent(t.id, t.agent).await.unwrap();
    assert_eq!((with_model.image_input_mode, with_model.vision_model.as_ref()), (ImageInputMode::Auto, Some(&eye)));

    store.agents().set_vision(t.id, t.agent, Some(ImageInputMode::Text), None).await.unwrap();
    let text = store.agents().agent(t.id, t.agent).await.unwrap();
    assert_eq!(
        (text.image_input_mode, text.vision_model.as_ref()),
        (ImageInputMode::Text, Some(&eye)),
        "the model stays"
    );

    store.agents().set_vision(t.id, t.agent, None, Some(None)).await.unwrap();
    let cleared = store.agents().agent(t.id, t.agent).await.unwrap();
    assert_eq!((cleared.image_input_mode, cleared.shown.vision_model), (ImageInputMode::Text, None));
}

/// A chat's `/voice` mode: off until set, kept per chat, back to off when turned off; another
/// tenant can neither set one for this tenant's agent nor read it.
#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn a_chats_voice_mode_is_kept_per_chat_and_off_removes_it(pool: PgPool) {
    use hermes_core::VoiceMode;
    let store = common::store(&pool);
    let t = common::tenant(&store, "acme").await;
    let other = common::tenant(&store, "globex").await;
    let (dm, group) = ("telegram:c1:dm:42", "telegram:c1:group:-100");
    assert_eq!(store.conversations().voice_mode(t.id, t.agent, dm).await.unwrap(), VoiceMode::Off);
    store.conversations().set_voice_mode(t.id, t.agent, dm, VoiceMode::VoiceOnly).await.unwrap();
    store.conversations().set_voice_mode(t.id, t.agent, group, VoiceMode::All).await.unwrap();
    store.conversations().set_voice_mode(t.id, t.agent, dm, VoiceMode::All).await.unwrap();
    assert_eq!(
        store.conversations().voice_mode(t.id, t.agent, dm).await.unwrap(),
        VoiceMode::All,
        "set again: replaced"
    );
    store.conversations().set_voice_mode(t.id, t.agent, group, VoiceMode::Off).await.unwrap();
    assert_eq!(store.conversations().voice_mode(t.id, t.agent, group).await.unwrap(), VoiceMode::Off);

    let foreign = store.conversations().set_voice_mode(other.id, t.agent, dm, VoiceMode::All).await;
    assert!(matches!(foreign, Err(hermes_store::StoreError::NotFound)), "{foreign:?}");
    assert_eq!(
        store.conversations().voice_mode(other.id, t.agent, dm).await.unwrap(),
        VoiceMode::Off,
        "not visible to another tenant"
    );
    assert_eq!(store.conversations().voice_mode(t.id, t.agent, dm).await.unwrap(), VoiceMode::All);
}

/// A new channel keeps for its admins exactly the commands the code says are admins' by
/// default (security review 2026-12, L7: `/rollback` and `/reload_mcp` were anyone's): the
/// column's default and `hermes_core::commands` cannot drift apart.
#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn a_new_channel_keeps_the_admins_by_default_commands_for_its_admins(pool: PgPool) {
    use hermes_core::commands::{Access, COMMANDS};
    let store = common::store(&pool);
    let t = common::tenant(&store, "acme").await;
    let channel = common::channel(&store, &t, &common::secrets(), "bot-1").await;
    let mut kept = channel.admin_commands.clone();
    kept.sort();
    let mut admins: Vec<String> =
        COMMANDS.iter().filter(|c| c.access == Access::AdminsByDefault).map(|c| c.name.to_owned()).collect();
    admins.sort();
    assert_eq!(kept, admins);
    assert!(kept.contains(&"rollback".to_owned()) && kept.contains(&"reload_mcp".to_owned()));
}

/// A bad context window is refused with what is wrong, not as a bad name. (An API mode is an
/// `ApiMode`: a bad one cannot reach the store.)
#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn a_new_agent_with_a_bad_context_window_is_refused_by_name(pool: PgPool) {
    let store = common::store(&pool);
    let t = common::tenant(&store, "acme").await;
    let mut bad_window = common::new_agent("window");
    bad_window.context_window = Some(0);
    let refused = store.agents().create_agent(t.id, bad_window, None).await.unwrap_err();
    assert!(matches!(&refused, hermes_store::StoreError::Invalid(why) if why.contains("context_window")), "{refused}");
}
