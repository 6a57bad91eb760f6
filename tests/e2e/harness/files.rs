//! Files a turn keeps, stored directly for tests about who may fetch them.

use hermes_core::{TenantId, TurnId};
use hermes_store::turn_files::TurnFile;

use super::TestEnv;

impl TestEnv {
    /// Keeps a picture, `image-x.png`, from `tenant`'s `turn` (as `image_generate` keeps one);
    /// its file id, as the API names it.
    pub async fn keep_picture(&self, tenant: TenantId, turn: TurnId) -> String {
        let picture = TurnFile {
            target: "generated/image-x.png".into(),
            name: "image-x.png".into(),
            mime: "image/png".into(),
            data: Ok(b"\x89PNG".to_vec()),
        };
        self.store.turns().save_turn_file(tenant, turn, &picture).await.unwrap();
        hermes_core::media::file_id(turn, "image-x.png").unwrap()
    }
}
