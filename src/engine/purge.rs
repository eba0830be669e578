//! Expiry: erasing the memories whose retention has passed
//! ([`crate::retention`]). An expired memory is hard-deleted like
//! `delete(id, hard)` erases one: its record, its embedding, the links of
//! the memories that followed it, and, by the layout, every stored version
//! of its text in the same commit.

use super::txn::Txn;
use super::{Engine, PurgeResult};
use crate::error::Result;
use crate::item::Timestamp;

impl Engine {
    /// Hard-deletes every memory expired at `now`, soft-deleted ones
    /// included (expiry ends the suppression a soft delete keeps too).
    pub fn purge_expired(&mut self, now: Timestamp, txn: &mut Txn) -> Result<PurgeResult> {
        let retention = &self.config.retention;
        let expired: Vec<String> = self
            .entries
            .values()
            .filter(|e| retention.is_expired(&e.item, now))
            .map(|e| e.item.id.clone())
            .collect();
        for id in &expired {
            // A summary erased with its source is already gone.
            if self.entries.contains_key(id) {
                self.delete(id, true, now, txn)?;
            }
        }
        Ok(PurgeResult {
            purged: expired.len(),
        })
    }
}
