//! The memory budget: one pool of bytes (`limits.memory_bytes`) shared by every request's
//! decode buffers, assembled output and response body, so the sum over all requests in
//! flight stays bounded whatever they ask for. A request reserves what it will hold before
//! it allocates; when the pool is short it waits briefly (`limits.memory_wait_ms`), then is
//! answered 503 with `Retry-After`. A request that needs more than the whole budget can
//! never run and is refused at once (413). Caches are not part of the budget: they are
//! bounded by their own capacities, and the default budget leaves room for them.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Budget accounting unit: permits are 64 KiB, so a `u32` permit count covers 256 TiB.
const UNIT: u64 = 64 * 1024;

#[derive(Debug, Clone, thiserror::Error)]
pub enum BudgetError {
    #[error(
        "the request needs {needed} bytes of working memory, more than this server's whole budget of {budget} bytes; select a smaller region"
    )]
    TooLarge { needed: u64, budget: u64 },
    #[error("the server's memory budget is in use by other requests; retry shortly")]
    Busy,
}

/// The shared pool.
#[derive(Debug, Clone)]
pub struct MemoryBudget {
    permits: Arc<Semaphore>,
    units: u32,
    wait: Duration,
}

/// Bytes held from the budget; given back when dropped.
#[derive(Debug, Default)]
pub struct Reservation {
    permits: Option<OwnedSemaphorePermit>,
}

impl Reservation {
    /// Adds `other` to this reservation (released together).
    pub fn merge(&mut self, other: Self) {
        match (&mut self.permits, other.permits) {
            (Some(mine), Some(theirs)) => mine.merge(theirs),
            (mine @ None, theirs) => *mine = theirs,
            (Some(_), None) => {}
        }
    }

    /// Bytes held (in whole units).
    pub fn bytes(&self) -> u64 {
        self.permits.as_ref().map_or(0, |p| p.num_permits() as u64 * UNIT)
    }
}

impl MemoryBudget {
    pub fn new(bytes: u64, wait: Duration) -> Self {
        let units = u32::try_from((bytes / UNIT).max(1)).unwrap_or(u32::MAX);
        Self { permits: Arc::new(Semaphore::new(units as usize)), units, wait }
    }

    /// The whole budget in bytes.
    pub fn total(&self) -> u64 {
        u64::from(self.units) * UNIT
    }

    /// Bytes not reserved right now.
    pub fn available(&self) -> u64 {
        self.permits.available_permits() as u64 * UNIT
    }

    /// Reserves `bytes` more of something made of many small pieces, `grown` bytes of it
    /// counted so far (and `bytes` added to it here): the pieces round up to the budget's
    /// unit together, not each — a thousand parts of four bytes are one unit, not a
    /// thousand.
    pub async fn reserve_growth(&self, grown: &AtomicU64, bytes: u64) -> Result<Reservation, BudgetError> {
        let before = grown.fetch_add(bytes, Ordering::Relaxed);
        let units = (before + bytes).div_ceil(UNIT) - before.div_ceil(UNIT);
        self.reserve(units * UNIT).await
    }

    /// Reserves `bytes`, waiting up to the configured time for other requests to finish.
    pub async fn reserve(&self, bytes: u64) -> Result<Reservation, BudgetError> {
        if bytes == 0 {
            return Ok(Reservation::default());
        }
        let units = bytes.div_ceil(UNIT);
        if units > u64::from(self.units) {
            return Err(BudgetError::TooLarge { needed: bytes, budget: self.total() });
        }
        let acquire = Arc::clone(&self.permits).acquire_many_owned(units as u32);
        match tokio::time::timeout(self.wait, acquire).await {
            Ok(Ok(permits)) => Ok(Reservation { permits: Some(permits) }),
            _ => Err(BudgetError::Busy),
        }
    }
}

/// The default budget: half of the memory this process may use (the cgroup limit when
/// there is one, else physical memory) minus the configured cache capacities, and at
/// least 256 MiB.
pub fn default_budget(cache_bytes: u64) -> u64 {
    let memory = cgroup_limit().or_else(physical_memory).unwrap_or(4 << 30);
    (memory / 2).saturating_sub(cache_bytes).max(256 << 20)
}

fn cgroup_limit() -> Option<u64> {
    // cgroup v2, then v1; "max" or a huge v1 value mean no limit.
    ["/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"]
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .find_map(|s| s.trim().parse::<u64>().ok())
        .filter(|&b| b < (1 << 50))
}

fn physical_memory() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn small_pieces_round_up_together() {
        let budget = MemoryBudget::new(4 * UNIT, Duration::from_millis(50));
        let grown = AtomicU64::new(0);
        let mut held = Reservation::default();
        // A thousand four-byte parts (a point's series through map-major chunks): one unit.
        for _ in 0..1000 {
            held.merge(budget.reserve_growth(&grown, 4).await.unwrap());
        }
        assert_eq!((held.bytes(), budget.available()), (UNIT, 3 * UNIT));
        // Growing past a unit boundary takes exactly the units crossed.
        held.merge(budget.reserve_growth(&grown, UNIT).await.unwrap());
        assert_eq!(held.bytes(), 2 * UNIT);
        assert!(matches!(budget.reserve_growth(&grown, 3 * UNIT).await, Err(BudgetError::Busy)));
        drop(held);
        assert_eq!(budget.available(), 4 * UNIT);
    }

    #[tokio::test]
    async fn reservations_wait_then_fail_and_are_given_back() {
        let budget = MemoryBudget::new(4 * UNIT, Duration::from_millis(50));
        let a = budget.reserve(3 * UNIT).await.unwrap();
        assert_eq!(budget.available(), UNIT);
        assert!(matches!(budget.reserve(2 * UNIT).await, Err(BudgetError::Busy)));
        assert!(matches!(budget.reserve(5 * UNIT).await, Err(BudgetError::TooLarge { .. })));
        let mut b = budget.reserve(1).await.unwrap();
        assert_eq!(b.bytes(), UNIT);
        drop(a);
        b.merge(budget.reserve(2 * UNIT).await.unwrap());
        assert_eq!((b.bytes(), budget.available()), (3 * UNIT, UNIT));
        drop(b);
        assert_eq!(budget.available(), 4 * UNIT);
        // A waiting request gets its share when another finishes within the wait.
        let held = budget.reserve(4 * UNIT).await.unwrap();
        let waiter = tokio::spawn({
            let budget = budget.clone();
            async move { budget.reserve(UNIT).await.map(|r| r.bytes()) }
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
        drop(held);
        assert_eq!(waiter.await.unwrap().unwrap(), UNIT);
        assert!(default_budget(0) >= 256 << 20);
    }
}
