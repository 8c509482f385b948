//! Events, holds, releases and the sweeper.
//!
//! - A hold takes every requested seat or none. A seat can be taken when it
//!   is available, or held past its deadline by the store's clock (an
//!   abandoned hold, taken over inline). The answer names the first
//!   requested seat (in seat order) that does not exist, else the first that
//!   cannot be taken. Then the per-user cap: the holder's seats of the event
//!   held and unexpired, or in payment, plus the seats asked for, must not
//!   pass it. A granted hold carries a token never issued before on every
//!   seat and lives `ttl_ms` from the store's now.
//! - A release frees the seats its token holds for its holder (expired or
//!   not, until swept). Refused: `not-holder` when the token's seats are
//!   another user's, else `hold-not-found`.
//! - The sweeper frees held seats whose deadline has come (deadline <= now),
//!   oldest deadline first, then by event and seat, at most its limit.

use super::ids::Ids;
use super::{StoreModel, Writes, available};
use crate::model::validate;
use booking::model::{EventId, HoldToken, Seat, SeatId, SeatState, UserId};
use booking::store::{
    AcquireHold, CreateEvent, ExpiredHold, HeldSeat, HoldGrant, ReclaimedHold, ReleaseHold, StoreError,
};

/// Whether a hold at `now_ms` may take `seat`.
pub(crate) fn takeable(seat: &Seat, now_ms: i64) -> bool {
    match seat.state {
        SeatState::Available => true,
        SeatState::Held => seat.hold_expires_at_ms.is_some_and(|d| d <= now_ms),
        SeatState::PaymentPending | SeatState::Sold => false,
    }
}

/// Whether `seat` counts against `holder`'s cap at `now_ms`.
fn counts_for(seat: &Seat, holder: &UserId, now_ms: i64) -> bool {
    seat.holder_id.as_deref() == Some(holder)
        && match seat.state {
            SeatState::Held => seat.hold_expires_at_ms.is_some_and(|d| d > now_ms),
            SeatState::PaymentPending => true,
            SeatState::Available | SeatState::Sold => false,
        }
}

impl StoreModel {
    /// `create_event`: the event and its seats, all available at version 0.
    pub(crate) fn create_event(&mut self, req: &CreateEvent) -> Result<(), StoreError> {
        validate::id("event_id", &req.event_id)?;
        validate::price(req.price_cents)?;
        let sorted = validate::event_seats(&req.seat_ids)?;
        if self.prices.contains_key(&req.event_id) {
            return Err(StoreError::EventExists(req.event_id.clone()));
        }
        self.prices.insert(req.event_id.clone(), req.price_cents);
        for seat_id in sorted {
            let seat = Seat {
                event_id: req.event_id.clone(),
                seat_id: seat_id.clone(),
                state: SeatState::Available,
                version: 0,
                hold_token: None,
                holder_id: None,
                hold_expires_at_ms: None,
                order_id: None,
                booking_id: None,
            };
            self.seats.insert((req.event_id.clone(), seat_id), seat);
        }
        Ok(())
    }

    /// `acquire_hold` at `now_ms`.
    pub(crate) fn acquire_hold(
        &mut self,
        req: &AcquireHold,
        now_ms: i64,
        ids: &mut Ids,
        w: &mut Writes,
    ) -> Result<HoldGrant, StoreError> {
        validate::id("event_id", &req.event_id)?;
        validate::id("holder_id", &req.holder_id)?;
        validate::hold_ttl(req.ttl_ms)?;
        validate::cap(req.max_held_seats)?;
        let wanted = validate::hold_seats(&req.seat_ids)?;
        if !self.prices.contains_key(&req.event_id) {
            return Err(StoreError::UnknownEvent(req.event_id.clone()));
        }
        let key = |s: &SeatId| (req.event_id.clone(), s.clone());
        if let Some(missing) = wanted.iter().find(|s| !self.seats.contains_key(&key(s))) {
            return Err(StoreError::UnknownSeat { event_id: req.event_id.clone(), seat_id: missing.clone() });
        }
        if let Some(taken) = wanted.iter().find(|s| !takeable(&self.seats[&key(s)], now_ms)) {
            return Err(StoreError::SeatUnavailable { event_id: req.event_id.clone(), seat_id: taken.clone() });
        }
        if let Some(limit) = req.max_held_seats {
            let held = self.event_seats(&req.event_id).filter(|s| counts_for(s, &req.holder_id, now_ms)).count();
            if held + wanted.len() > limit as usize {
                return Err(StoreError::HoldLimit {
                    event_id: req.event_id.clone(),
                    limit,
                    held: held as u32,
                    requested: wanted.len() as u32,
                });
            }
        }
        let token: HoldToken = ids.next(self);
        let expires_at_ms = now_ms + req.ttl_ms;
        let mut seats = Vec::new();
        let mut reclaimed = Vec::new();
        for seat_id in &wanted {
            let before = self.seats[&key(seat_id)].clone();
            if before.state == SeatState::Held {
                let expired_at_ms = before.hold_expires_at_ms.expect("a held seat has a deadline");
                reclaimed.push(ReclaimedHold { seat_id: seat_id.clone(), expired_at_ms });
            }
            let after = Seat {
                state: SeatState::Held,
                version: before.version + 1,
                hold_token: Some(token),
                holder_id: Some(req.holder_id.clone()),
                hold_expires_at_ms: Some(expires_at_ms),
                order_id: None,
                booking_id: None,
                ..before
            };
            seats.push(HeldSeat { seat_id: seat_id.clone(), version: after.version });
            self.put_seat(after, w);
        }
        Ok(HoldGrant {
            event_id: req.event_id.clone(),
            holder_id: req.holder_id.clone(),
            hold_token: token,
            seats,
            expires_at_ms,
            granted_at_ms: now_ms,
            reclaimed,
        })
    }

    /// `release_hold`.
    pub(crate) fn release_hold(&mut self, req: &ReleaseHold, w: &mut Writes) -> Result<Vec<SeatId>, StoreError> {
        validate::id("event_id", &req.event_id)?;
        validate::id("holder_id", &req.holder_id)?;
        if !self.prices.contains_key(&req.event_id) {
            return Err(StoreError::UnknownEvent(req.event_id.clone()));
        }
        let with_token: Vec<Seat> =
            self.event_seats(&req.event_id).filter(|s| s.hold_token == Some(req.hold_token)).cloned().collect();
        let mine: Vec<&Seat> = with_token
            .iter()
            .filter(|s| s.state == SeatState::Held && s.holder_id.as_deref() == Some(req.holder_id.as_str()))
            .collect();
        if mine.is_empty() {
            let others = with_token.iter().any(|s| s.holder_id.as_deref() != Some(req.holder_id.as_str()));
            return Err(if others { StoreError::NotHolder } else { StoreError::HoldNotFound });
        }
        let freed: Vec<SeatId> = mine.iter().map(|s| s.seat_id.clone()).collect();
        for seat in mine.into_iter().map(available).collect::<Vec<_>>() {
            self.put_seat(seat, w);
        }
        Ok(freed)
    }

    /// `sweep_expired_holds(limit_seats)` at `now_ms`.
    pub(crate) fn sweep(&mut self, limit_seats: u32, now_ms: i64, w: &mut Writes) -> Vec<ExpiredHold> {
        let mut due: Vec<(i64, EventId, SeatId)> = self
            .seats
            .values()
            .filter(|s| s.state == SeatState::Held && s.hold_expires_at_ms.is_some_and(|d| d <= now_ms))
            .map(|s| (s.hold_expires_at_ms.expect("held"), s.event_id.clone(), s.seat_id.clone()))
            .collect();
        due.sort();
        due.truncate(limit_seats as usize);
        let mut out = Vec::new();
        for (expired_at_ms, event_id, seat_id) in due {
            let freed = available(&self.seats[&(event_id.clone(), seat_id.clone())]);
            self.put_seat(freed, w);
            out.push(ExpiredHold { event_id, seat_id, expired_at_ms, reclaimed_at_ms: now_ms });
        }
        out
    }
}
