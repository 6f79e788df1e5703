//! The live connections of the HTTP profile, by `Acp-Connection-Id`.

use super::conn::AgentConn;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

#[derive(Default)]
pub(super) struct Registry {
    connections: Mutex<HashMap<String, Arc<AgentConn>>>,
}

impl Registry {
    fn map(&self) -> MutexGuard<'_, HashMap<String, Arc<AgentConn>>> {
        crate::sync::lock(&self.connections)
    }

    pub(super) fn insert(&self, conn: Arc<AgentConn>) {
        self.map().insert(conn.id.clone(), conn);
    }

    /// A connection that has not shut down.
    pub(super) fn get(&self, id: &str) -> Option<Arc<AgentConn>> {
        self.map().get(id).filter(|c| !c.is_closed()).cloned()
    }

    /// Takes a connection out (shut down or not, as a DELETE may follow a close).
    pub(super) fn remove(&self, id: &str) -> Option<Arc<AgentConn>> {
        self.map().remove(id)
    }

    /// Forgets `conn` once it has ended, unless the id now names another.
    pub(super) fn forget(&self, conn: &Arc<AgentConn>) {
        let mut map = self.map();
        if map.get(&conn.id).is_some_and(|c| Arc::ptr_eq(c, conn)) {
            map.remove(&conn.id);
        }
    }

    pub(super) fn close_all(&self) {
        let all: Vec<_> = self.map().drain().map(|(_, c)| c).collect();
        for conn in all {
            conn.shutdown();
        }
    }
}
