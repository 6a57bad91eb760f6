//! The load test's parts: the requests, the server's own figures, the scenarios and the report.

pub mod report;
pub mod scenarios;
pub mod server;
pub mod turns;
