//! End-to-end tests of Hermes Cloud on real Postgres, Redis, RabbitMQ and Docker.
//! Start them with `deploy/dev/ensure-services.sh` and build the sandbox test image with
//! `deploy/sandbox/build-test-image.sh` (the README's test command does both).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::disallowed_methods,
    reason = "test code: a failed unwrap is a failed test, and a test starts its tasks freely"
)]

mod admin;
mod api_jobs;
mod approval;
mod architecture;
mod attacks;
mod audience;
mod background;
mod bad_input;
mod browser;
mod channels_api;
mod chaos;
mod chat;
mod chat_commands;
mod chat_files;
mod code;
mod console;
mod containers;
mod crash;
mod cron;
mod cron_limits;
mod cron_replicas;
mod cron_scripts;
mod cross_tenant;
mod delegation;
mod derived;
mod discovery;
mod docs_paths;
mod egress;
mod event_hooks;
mod fairness;
mod fencing;
mod gateway;
mod goals;
mod harness;
mod idempotency;
mod image_gen;
mod inbox;
mod interrupt;
mod isolation;
mod kubernetes;
mod limits;
mod mcp_isolation;
mod mcp_stdio;
mod memory;
mod openapi;
mod ops;
mod outbox_crash;
mod pg_failover;
mod prompt_caching;
mod providers;
mod rabbit_cluster;
mod redis_sentinel;
mod responses;
mod retry;
mod rolling_upgrade;
mod runs;
mod sandbox;
mod schema_fuzz;
mod sdk;
mod search;
mod secrets;
mod sessions;
mod sessions_api;
mod side_models;
mod skills;
mod slack;
mod sockets;
mod structure;
mod telegram;
mod telegram_features;
mod tenant_lifecycle;
mod tools;
mod traces;
mod usage;
mod vision;
mod voice;
mod voice_out;
mod web;
mod webhooks;
mod wecom;
mod workspaces;
