//! The bounds of a retention period (how long a tenant's data is kept), shared by the
//! configuration's defaults and each tenant's own periods.

/// Usage detail cannot go sooner: the spending caps and the month's budget read each call of
/// the month.
pub const USAGE_DETAIL_MIN_DAYS: u32 = 35;

/// No period is longer (100 years); 0 keeps forever.
pub const MAX_DAYS: u32 = 36_500;
