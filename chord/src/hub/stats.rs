//! What a hub reports: the outcome of one publish, and counters over its life.

/// What one [`Hub::publish`](super::Hub::publish) did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Published {
    /// Subscriptions the batch was queued for.
    pub delivered: usize,
    /// Subscriptions cut because their queue was full.
    pub cut: usize,
}

/// Counters over a hub's life, from [`Hub::stats`](super::Hub::stats).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Values the hub holds now.
    pub streams: usize,
    /// Open subscriptions now.
    pub subscribers: usize,
    /// Non-empty batches published and applied.
    pub published: u64,
    /// Subscriptions cut for falling behind.
    pub cut: u64,
}
