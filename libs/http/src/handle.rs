//! A part of a router's state: axum clones the state for every request, so each part is one
//! `Arc` to what its handlers share.

use std::sync::Arc;

/// What a group of handlers shares, behind one `Arc`.
pub struct StateHandle<T>(Arc<T>);

impl<T> StateHandle<T> {
    pub fn new(shared: T) -> Self {
        Self(Arc::new(shared))
    }
}

impl<T> Clone for StateHandle<T> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<T> std::ops::Deref for StateHandle<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}
