//! `QueueDiscipline`: who gets the next free slot (CoDel age limit, adaptive LIFO,
//! priority, deadline drop). Owned by one consumer: not shared between threads.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use guards::handle::AnyQueue;
use guards::schema;
use guards::with_queue;

use crate::args;
use crate::convert::{big, ms, num, numbers, Options};
use crate::errors::{self, config_failure, Details};

const CLASS: &str = "QueueDiscipline";

/// A wait queue's discipline: `push` waiters (by id), `pop` the next one to serve; waiters
/// past the age limit while the queue stands, or past their deadline, are dropped (see
/// `dropped()`). Owned by one consumer (not lock-free, not shared between threads).
#[napi]
pub struct QueueDiscipline {
    q: AnyQueue,
}

/// A waiter id: a whole number (a bigint for ids past 2^53).
fn id_of(env: &Env, id: &Unknown<'_>) -> Result<u64> {
    args::whole(env, "id", id, u64::MAX)
}

fn waiter<'e>(env: &'e Env, w: &guards_core::queue_discipline::Waiter) -> Result<Object<'e>> {
    let mut o = Object::new(env)?;
    o.set("id", num(w.id))?;
    o.set("enqueuedAt", big(w.enqueued_at))?;
    o.set("priority", u32::from(w.priority.level()))?;
    if w.has_deadline() {
        o.set("deadline", big(w.deadline))?;
    }
    Ok(o)
}

#[napi]
impl QueueDiscipline {
    /// A queue with `options` (`capacity`, `interval`, `target`, `lifo`, `codel`,
    /// `priority`).
    #[napi(
        constructor,
        catch_unwind,
        ts_args_type = "options?: QueueDisciplineOptions"
    )]
    pub fn new(env: Env, options: Option<Unknown<'_>>) -> Result<Self> {
        let c = Options::read(&env, CLASS, options)?.build(&env, &schema::QUEUE_DISCIPLINE, "")?;
        let q = AnyQueue::new(c).map_err(|f| config_failure(&env, CLASS, "", &f))?;
        Ok(QueueDiscipline { q })
    }

    /// Queue waiter `id` (priority 0..7, default 1; `deadline` a bigint instant) at `now`;
    /// a full queue throws `QueueFullError`.
    #[napi(
        catch_unwind,
        ts_args_type = "id: number | bigint, priority?: number, deadline?: bigint | null, now?: bigint"
    )]
    pub fn push(
        &mut self,
        env: Env,
        id: Unknown<'_>,
        priority: Option<Unknown<'_>>,
        deadline: Option<Unknown<'_>>,
        now: Option<Unknown<'_>>,
    ) -> Result<()> {
        let id = id_of(&env, &id)?;
        let p = args::priority(&env, priority, 1)?;
        let d = args::opt_instant(&env, "deadline", deadline)?;
        let now = args::now(&env, now)?;
        with_queue!(&mut self.q, q => q.push(now, id, p, d)).map_err(|r| {
            errors::throw(
                &env,
                "QUEUE_FULL",
                &format!("the queue is full ({} waiters)", r.capacity),
                Details {
                    reason: Some("queue_full"),
                    numbers: vec![("capacity", f64::from(r.capacity))],
                    ..Details::default()
                },
            )
        })
    }

    /// The next waiter to serve at `now` (`{ id, enqueuedAt, priority, deadline?, order }`),
    /// or `null` when none is left; waiters dropped on the way are in `dropped()`.
    #[napi(
        catch_unwind,
        ts_args_type = "now?: bigint",
        ts_return_type = "DequeuedWaiter | null"
    )]
    pub fn pop<'e>(
        &mut self,
        env: &'e Env,
        now: Option<Unknown<'_>>,
    ) -> Result<Option<Object<'e>>> {
        let now = args::now(env, now)?;
        match with_queue!(&mut self.q, q => q.pop(now)) {
            Some(d) => {
                let mut o = waiter(env, &d.waiter)?;
                o.set("order", d.order.name())?;
                Ok(Some(o))
            }
            None => Ok(None),
        }
    }

    /// Drop every waiter past its deadline or the age limit at `now`; how many.
    #[napi(catch_unwind, ts_args_type = "now?: bigint")]
    pub fn expire(&mut self, env: Env, now: Option<Unknown<'_>>) -> Result<u32> {
        let now = args::now(&env, now)?;
        Ok(with_queue!(&mut self.q, q => q.expire(now)))
    }

    /// The waiters dropped by the last `pop` or `expire`: `[{ id, reason, ... }]`.
    #[napi(catch_unwind, ts_return_type = "Array<DroppedWaiter>")]
    pub fn dropped<'e>(&self, env: &'e Env) -> Result<Vec<Object<'e>>> {
        let list: Vec<_> = with_queue!(&self.q, q => q.dropped().to_vec());
        list.iter()
            .map(|d| {
                let mut o = waiter(env, &d.waiter)?;
                o.set("reason", d.reason.name())?;
                Ok(o)
            })
            .collect()
    }

    /// Take waiter `id` out (its caller gave up); whether it was there.
    #[napi(catch_unwind, ts_args_type = "id: number | bigint")]
    pub fn remove(&mut self, env: Env, id: Unknown<'_>) -> Result<bool> {
        let id = id_of(&env, &id)?;
        Ok(with_queue!(&mut self.q, q => q.remove(id)).is_some())
    }

    /// Waiters queued.
    #[napi(getter, catch_unwind)]
    pub fn length(&self) -> u32 {
        with_queue!(&self.q, q => q.len())
    }

    /// Waiters queued by priority (8 numbers, priority 0 first).
    #[napi(catch_unwind)]
    pub fn length_by_priority(&self) -> Vec<u32> {
        with_queue!(&self.q, q => q.len_by_priority().to_vec())
    }

    /// Whether the queue has been non-empty for a whole `interval` at `now`.
    #[napi(catch_unwind, ts_args_type = "now?: bigint")]
    pub fn is_standing(&self, env: Env, now: Option<Unknown<'_>>) -> Result<bool> {
        let now = args::now(&env, now)?;
        Ok(with_queue!(&self.q, q => q.is_standing(now)))
    }

    /// The oldest waiter's age in ms at `now`.
    #[napi(catch_unwind, ts_args_type = "now?: bigint")]
    pub fn oldest_age_ms(&self, env: Env, now: Option<Unknown<'_>>) -> Result<f64> {
        let now = args::now(&env, now)?;
        Ok(ms(with_queue!(&self.q, q => q.oldest_age(now))))
    }

    /// Counters.
    #[napi(catch_unwind, ts_return_type = "QueueDisciplineStats")]
    pub fn stats<'e>(&self, env: &'e Env) -> Result<Object<'e>> {
        let s = with_queue!(&self.q, q => q.stats());
        numbers(
            env,
            &[
                ("enqueued", num(s.enqueued)),
                ("servedFifo", num(s.served_fifo)),
                ("servedLifo", num(s.served_lifo)),
                ("droppedAgeLimit", num(s.dropped_age_limit)),
                ("droppedDeadline", num(s.dropped_deadline)),
                ("cancelled", num(s.cancelled)),
                ("rejectedFull", num(s.rejected_full)),
                ("length", f64::from(with_queue!(&self.q, q => q.len()))),
            ],
        )
    }
}
