//! The egress proxy's CA (issue 39): the first one stored is the one every worker gets, its key
//! sealed at rest, and the tenant role cannot read it at all.

use sqlx::{Connection, PgConnection, PgPool};

use hermes_store::SecretBox;

use crate::common;

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn the_first_authority_stored_is_everyones_and_no_tenant_reads_it(pool: PgPool) {
    let store = common::store(&pool);
    let secrets = SecretBox::from_base64(&SecretBox::generate_master_key().unwrap()).unwrap();
    assert_eq!(store.system().egress_authority(&secrets).await.unwrap(), None);
    let first = store.system().keep_egress_authority(("CERT-ONE", "KEY-ONE"), &secrets).await.unwrap();
    let second = store.system().keep_egress_authority(("CERT-TWO", "KEY-TWO"), &secrets).await.unwrap();
    assert_eq!(first, ("CERT-ONE".to_owned(), "KEY-ONE".to_owned()));
    assert_eq!(second, first, "a second worker's CA loses to the stored one");
    let sealed: Vec<u8> = sqlx::query_scalar("SELECT key_sealed FROM egress_authority").fetch_one(&pool).await.unwrap();
    assert!(!String::from_utf8_lossy(&sealed).contains("KEY-ONE"), "the key is sealed at rest");

    let mut tenant = PgConnection::connect_with(&pool.connect_options()).await.unwrap();
    sqlx::raw_sql("SET ROLE hermes_tenant").execute(&mut tenant).await.unwrap();
    let read = sqlx::query("SELECT cert_pem FROM egress_authority").fetch_all(&mut tenant).await;
    assert!(read.is_err(), "the tenant role may not read the installation's CA");
}
