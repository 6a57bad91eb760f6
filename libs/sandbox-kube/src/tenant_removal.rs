//! What a deleted tenant leaves in the cluster: its sandbox pods, their workspace claims,
//! token secrets and network policies, all labelled with the tenant (`names::labels`).

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, Secret};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::Resource;
use kube::api::{DeleteParams, ListParams};
use serde::de::DeserializeOwned;

use hermes_core::TenantId;
use hermes_sandbox::Result;

use crate::manifests::{LABEL_OWNER, LABEL_TENANT};
use crate::{KubeSandboxes, api_err, status};

impl KubeSandboxes {
    /// The tenants with a sandbox pod or a workspace claim of this installation.
    pub(crate) async fn tenants_kept(&self) -> Result<Vec<uuid::Uuid>> {
        let selector = format!("{LABEL_OWNER}={}", self.inner.cfg.kubernetes.name_prefix);
        let params = ListParams::default().labels(&selector);
        let claims = self.api::<PersistentVolumeClaim>().list(&params).await.map_err(api_err)?;
        let pods = self.api::<Pod>().list(&params).await.map_err(api_err)?;
        let labels = claims.items.iter().map(|c| &c.metadata).chain(pods.items.iter().map(|p| &p.metadata));
        let mut tenants: Vec<uuid::Uuid> =
            labels.filter_map(|m| m.labels.as_ref()?.get(LABEL_TENANT)?.parse().ok()).collect();
        tenants.sort();
        tenants.dedup();
        Ok(tenants)
    }

    /// Deletes every object of `tenant`'s sandboxes: pods first, then their claims (the
    /// workspaces), token secrets and network policies.
    pub(crate) async fn remove_tenant(&self, tenant: TenantId) -> Result<usize> {
        let selector = format!("{LABEL_OWNER}={},{LABEL_TENANT}={tenant}", self.inner.cfg.kubernetes.name_prefix);
        let pods = self.delete_labelled::<Pod>(&selector).await?;
        for pod in &pods {
            self.forget(pod);
        }
        let claims = self.delete_labelled::<PersistentVolumeClaim>(&selector).await?;
        let secrets = self.delete_labelled::<Secret>(&selector).await?;
        let policies = self.delete_labelled::<NetworkPolicy>(&selector).await?;
        Ok(pods.len() + claims.len() + secrets.len() + policies.len())
    }

    /// Deletes the objects of kind `K` that `selector` picks; their names.
    async fn delete_labelled<K>(&self, selector: &str) -> Result<Vec<String>>
    where
        K: Resource<Scope = NamespaceResourceScope> + Clone + DeserializeOwned + std::fmt::Debug,
        <K as Resource>::DynamicType: Default,
    {
        let api = self.api::<K>();
        let found = api.list(&ListParams::default().labels(selector)).await.map_err(api_err)?;
        let mut deleted = Vec::new();
        for item in found.items {
            let Some(name) = item.meta().name.clone() else { continue };
            match api.delete(&name, &DeleteParams::default()).await {
                Ok(_) => deleted.push(name),
                Err(e) if status(&e) == Some(404) => {}
                Err(e) => return Err(api_err(e)),
            }
        }
        Ok(deleted)
    }
}
