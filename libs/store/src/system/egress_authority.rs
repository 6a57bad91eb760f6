//! The egress proxy's certificate authority (issue 39), the installation's and no tenant's: its
//! certificate in clear (sandboxes trust it), its key sealed with the master key. The first
//! worker that needs one makes it; the first to store wins, and every worker uses that one.

use crate::{Result, SecretBox, StoreError, views::System};

const CONTEXT: &str = "egress-authority:1";

impl System<'_> {
    /// The stored authority: (certificate PEM, key PEM), opened.
    pub async fn egress_authority(self, secrets: &SecretBox) -> Result<Option<(String, String)>> {
        let row: Option<(String, Vec<u8>)> =
            sqlx::query_as("SELECT cert_pem, key_sealed FROM egress_authority WHERE id = 1")
                .fetch_optional(self.system_pool())
                .await?;
        row.map(|(cert, sealed)| {
            let key = String::from_utf8(secrets.open(CONTEXT, &sealed)?)
                .map_err(|_| StoreError::Corrupt("the egress CA's key is not UTF-8".into()))?;
            Ok((cert, key))
        })
        .transpose()
    }

    /// Stores `made` unless an authority is stored already; the stored one, opened.
    pub async fn keep_egress_authority(self, made: (&str, &str), secrets: &SecretBox) -> Result<(String, String)> {
        let sealed = secrets.seal(CONTEXT, made.1.as_bytes())?;
        sqlx::query(
            "INSERT INTO egress_authority (id, cert_pem, key_sealed) VALUES (1, $1, $2) ON CONFLICT (id) DO NOTHING",
        )
        .bind(made.0)
        .bind(sealed)
        .execute(self.system_pool())
        .await?;
        self.egress_authority(secrets).await?.ok_or(StoreError::NotFound)
    }
}
