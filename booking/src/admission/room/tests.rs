//! The in-memory rooms keep the contract.

use super::*;

#[tokio::test]
async fn mem_rooms_keep_the_contract() {
    contract::all(&MemRooms::new(), "mem").await;
}
