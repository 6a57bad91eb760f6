//! The work queue: "session S of tenant T has work".

use futures_util::StreamExt;
use lapin::options::{BasicAckOptions, BasicCancelOptions, BasicConsumeOptions, BasicNackOptions, BasicPublishOptions};
use lapin::types::FieldTable;
use lapin::{BasicProperties, Channel};
use serde::{Deserialize, Serialize};

use hermes_core::{SessionId, TenantId};

use crate::{Broker, QueueError, Result};

/// The body of a work message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionWork {
    pub tenant_id: TenantId,
    pub session_id: SessionId,
}

impl Broker {
    /// Publishes a work message and waits for RabbitMQ to confirm it is stored.
    pub async fn publish_work(&self, work: &SessionWork) -> Result<()> {
        let body = serde_json::to_vec(work)?;
        let confirm = self
            .work_channel()
            .basic_publish(
                "".into(),
                self.names().work_queue.as_str().into(),
                BasicPublishOptions::default(),
                &body,
                BasicProperties::default().with_delivery_mode(2).with_content_type("application/json".into()),
            )
            .await?
            .await?;
        if confirm.is_nack() {
            return Err(QueueError::NotConfirmed);
        }
        Ok(())
    }

    /// Starts consuming work with at most `prefetch` unacknowledged messages.
    pub async fn consume_work(&self, prefetch: u16, consumer_tag: &str) -> Result<WorkConsumer> {
        let channel = self.channel_with_prefetch(prefetch).await?;
        let consumer = channel
            .basic_consume(
                self.names().work_queue.as_str().into(),
                consumer_tag.into(),
                BasicConsumeOptions::default(),
                FieldTable::default(),
            )
            .await?;
        Ok(WorkConsumer { channel, consumer, tag: consumer_tag.to_owned() })
    }
}

/// A stream of work deliveries.
pub struct WorkConsumer {
    channel: Channel,
    consumer: lapin::Consumer,
    tag: String,
}

/// One delivery; acknowledge it once the turn's lease is recorded in Postgres.
pub struct WorkDelivery {
    pub work: SessionWork,
    acker: lapin::Acker,
    pub redelivered: bool,
}

impl WorkDelivery {
    /// Acknowledges the delivery. Errors are logged, not returned: an unacknowledged
    /// delivery is redelivered, which the worker handles anyway.
    pub async fn ack(&self) {
        if let Err(e) = self.acker.ack(BasicAckOptions::default()).await {
            tracing::warn!(error = %e, "cannot ack work delivery");
        }
    }

    /// Returns the delivery to the queue for another try.
    pub async fn requeue(&self) {
        if let Err(e) = self.acker.nack(BasicNackOptions { requeue: true, ..Default::default() }).await {
            tracing::warn!(error = %e, "cannot requeue work delivery");
        }
    }
}

impl WorkConsumer {
    /// The next delivery; `None` when the consumer was cancelled or the connection closed.
    /// Malformed messages are acknowledged and skipped.
    pub async fn next(&mut self) -> Option<Result<WorkDelivery>> {
        loop {
            let delivery = match self.consumer.next().await? {
                Ok(d) => d,
                Err(e) => return Some(Err(e.into())),
            };
            match serde_json::from_slice::<SessionWork>(&delivery.data) {
                Ok(work) => {
                    return Some(Ok(WorkDelivery { work, redelivered: delivery.redelivered, acker: delivery.acker }));
                }
                Err(e) => {
                    tracing::warn!(error = %e, "dropping malformed work message");
                    let _ = delivery.acker.ack(BasicAckOptions::default()).await;
                }
            }
        }
    }

    /// Stops receiving new deliveries; unacknowledged ones go back to the queue.
    pub async fn cancel(&self) {
        if let Err(e) = self.channel.basic_cancel(self.tag.as_str().into(), BasicCancelOptions::default()).await {
            tracing::warn!(error = %e, "cannot cancel work consumer");
        }
    }
}
