//! Ids the store draws: the model takes them from the store's answer (it
//! cannot and need not predict them) and checks each is new; where the
//! store gave none (it refused what the model grants), a placeholder.

use super::StoreModel;
use std::collections::VecDeque;
use uuid::Uuid;

/// The ids one answer carries, handed out in the order the model needs them.
#[derive(Debug, Default)]
pub(crate) struct Ids {
    given: VecDeque<Uuid>,
    /// Ids the store handed out before (a token, order, ... reused).
    pub reused: Vec<Uuid>,
}

impl Ids {
    /// The ids of an answer, in the order the model draws them.
    pub fn from(given: impl IntoIterator<Item = Uuid>) -> Self {
        Self { given: given.into_iter().collect(), reused: Vec::new() }
    }

    /// The next id: the answer's, checked new, or a placeholder.
    pub fn next<T: From<Uuid>>(&mut self, model: &mut StoreModel) -> T {
        match self.given.pop_front() {
            Some(id) => {
                if !model.issued.insert(id) {
                    self.reused.push(id);
                }
                T::from(id)
            }
            None => {
                model.placeholders += 1;
                T::from(Uuid::from_u128((0x0b5e_55ed_u128 << 96) | u128::from(model.placeholders)))
            }
        }
    }
}
