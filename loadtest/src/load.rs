//! The load test's parts: the requests, the server's own figures, the scenarios and the report.

pub mod pairs;
pub mod report;
pub mod resume;
pub mod scenarios;
pub mod server;
pub mod turns;
