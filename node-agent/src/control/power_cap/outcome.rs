//! What the power cap is set to (`--power-cap`) and what the state machine reports: why a record
//! was ignored, why the original limits were written back.

/// `--power-cap`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PowerCapMode {
    /// No budget consumer, nothing written.
    Off,
    /// Consume budgets, compute and report the limits, write nothing.
    DryRun,
    /// Consume budgets and write the powercap limits.
    On,
}

impl PowerCapMode {
    pub fn as_str(self) -> &'static str {
        match self {
            PowerCapMode::Off => "off",
            PowerCapMode::DryRun => "dry-run",
            PowerCapMode::On => "on",
        }
    }
}

/// Why a record was not applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ignored {
    /// Sequence not higher than the last applied one (replays, reordering).
    Older,
    /// `validUntilNs` already passed when it arrived.
    Stale,
    /// Budget not a positive finite number of watts.
    Invalid,
    /// Not a PowerBudget in single-object encoding.
    Decode,
    /// Keyed with this host but `hostId` names another.
    Host,
    /// Budget outside the record's own `[minWatts, maxWatts]` (graph-service never sends one).
    Bounds,
}

impl Ignored {
    pub const ALL: [Ignored; 6] = [Ignored::Older, Ignored::Stale, Ignored::Invalid, Ignored::Decode, Ignored::Host, Ignored::Bounds];
    pub fn label(self) -> &'static str {
        ["older", "stale", "invalid", "decode", "host", "bounds"][self as usize]
    }
}

/// Why the original limits were written back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Restore {
    Expired,
    Timeout,
    Tombstone,
    Shutdown,
    /// At start, from the state file of an agent that did not stop cleanly.
    Recovered,
}

impl Restore {
    pub const ALL: [Restore; 5] = [Restore::Expired, Restore::Timeout, Restore::Tombstone, Restore::Shutdown, Restore::Recovered];
    pub fn label(self) -> &'static str {
        ["expired", "timeout", "tombstone", "shutdown", "recovered"][self as usize]
    }
}

/// What one call changed (for tests and the consumer's bookkeeping).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Applied,
    Ignored(Ignored),
    Restored(Restore),
    Nothing,
}
