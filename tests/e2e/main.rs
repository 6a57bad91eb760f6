//! End-to-end tests of Hermes Cloud on real Postgres, Redis, RabbitMQ and Docker.
//! Start them with `deploy/dev/ensure-services.sh` and build the sandbox test image with
//! `deploy/sandbox/build-test-image.sh` (the README's test command does both).

mod architecture;
mod bad_input;
mod chat;
mod crash;
mod harness;
mod isolation;
mod ops;
mod retry;
mod tools;
