//! One authenticated command request bound to its upstream, and how its single command, pipeline
//! or transaction runs there.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::StatusCode;
use axum::response::Response;
use redis::Value;

use super::auth::Grant;
use super::encoding::{Item, Items, Reply, ResultItem};
use super::extractors::{Base64, Payload};
use super::state::App;
use crate::commands::command::Command;
use crate::commands::policy;
use crate::commands::scripts::ReplyFix;
use crate::error::{error_text, json_response, GatewayError};
use crate::metrics::DbLabels;
use crate::upstream::Upstream;

/// One authenticated request bound to its upstream, as every command route takes it.
///
/// As an extractor it runs, in this order, [`Grant`] (401 before the body is read),
/// [`Base64`] and [`Payload`] (413 or 400).
pub struct Call {
    app: Arc<App>,
    /// The token's database, held until the reply even if a reload removes the token.
    grant: Grant,
    base64: bool,
    /// The request body.
    pub body: Bytes,
}

impl FromRequest<Arc<App>> for Call {
    type Rejection = GatewayError;

    async fn from_request(request: Request, app: &Arc<App>) -> Result<Self, GatewayError> {
        let (mut parts, body) = request.into_parts();
        let grant = Grant::from_request_parts(&mut parts, app).await?;
        let Ok(Base64(base64)) = Base64::from_request_parts(&mut parts, app).await;
        let Payload(body) = Payload::from_request(Request::from_parts(parts, body), app).await?;
        Ok(Self {
            app: app.clone(),
            grant,
            base64,
            body,
        })
    }
}

/// One command of a pipeline: answered already, or waiting for its reply from the shared batch.
enum Slot {
    Done(Item),
    Shared(ReplyFix),
}

impl Call {
    /// The upstream the token reaches.
    fn upstream(&self) -> &Upstream {
        &self.grant.db.upstream
    }

    /// `SCRIPT KILL` or `FUNCTION KILL`; one that stopped a script is counted.
    async fn kill(&self, command: &Command) -> Result<Value, GatewayError> {
        let reply = self.upstream().kill(command).await?;
        if matches!(reply, Value::Okay) {
            self.app
                .metrics
                .scripts_killed
                .get_or_create(&DbLabels {
                    database: self.grant.db.name.clone(),
                })
                .inc();
        }
        Ok(reply)
    }

    /// Refuses a pipeline or transaction of more than `--max-pipeline-commands` commands.
    fn check_length(&self, commands: &[Command]) -> Result<(), GatewayError> {
        let limit = self.app.max_pipeline_commands;
        if commands.len() > limit {
            return Err(GatewayError::BadRequest(format!(
                "ERR {} commands in one request; the limit is {limit}",
                commands.len()
            )));
        }
        Ok(())
    }

    /// Checks a command against the rules and rewrites scripts.
    fn prepare(&self, command: &mut Command) -> Result<ReplyFix, GatewayError> {
        self.app.policy.check(command, self.grant.readonly)?;
        if let Some(known) = &self.app.known_scripts {
            known.check(command)?;
        }
        Ok(self.app.scripts.rewrite(command))
    }

    /// The 200 reply of a pipeline or transaction.
    fn items(&self, items: &[Item]) -> Response {
        json_response(
            StatusCode::OK,
            &Items {
                items,
                base64: self.base64,
            },
        )
    }

    pub async fn single(&self, mut command: Command) -> Result<Response, GatewayError> {
        let fix = self.prepare(&mut command)?;
        let reply = if policy::is_kill(&command) {
            self.kill(&command).await?
        } else {
            self.upstream()
                .pipeline(std::slice::from_ref(&command))
                .await?
                .pop()
                .ok_or_else(|| GatewayError::Unavailable("redis sent no reply".to_owned()))?
        };
        match fix.apply(reply) {
            Value::ServerError(e) => Err(GatewayError::Redis(error_text(&e))),
            value => Ok(json_response(
                StatusCode::OK,
                &ResultItem(Reply {
                    value: &value,
                    base64: self.base64,
                }),
            )),
        }
    }

    pub async fn pipeline(&self, commands: Vec<Command>) -> Result<Response, GatewayError> {
        self.check_length(&commands)?;
        // Commands refused by policy answer in place; kills go out on their own connection (in
        // order, before the batch: a kill must not wait behind a busy script); the others go to
        // Redis in one batch.
        let mut slots: Vec<Slot> = Vec::with_capacity(commands.len());
        let mut to_send: Vec<Command> = Vec::with_capacity(commands.len());
        for mut command in commands {
            slots.push(match self.prepare(&mut command) {
                Err(error) => Slot::Done(Item::Error(error.message())),
                Ok(_) if policy::is_kill(&command) => Slot::Done(match self.kill(&command).await {
                    Ok(value) => Item::Reply(value),
                    Err(error) => Item::Error(error.message()),
                }),
                Ok(fix) => {
                    to_send.push(command);
                    Slot::Shared(fix)
                }
            });
        }
        let replies = if to_send.is_empty() {
            Vec::new()
        } else {
            self.upstream().pipeline(&to_send).await?
        };
        let mut replies = replies.into_iter();
        let items: Vec<Item> = slots
            .into_iter()
            .map(|slot| match slot {
                Slot::Done(item) => item,
                Slot::Shared(fix) => match replies.next() {
                    Some(value) => Item::Reply(fix.apply(value)),
                    None => Item::Error("ERR redis sent too few replies".to_owned()),
                },
            })
            .collect();
        Ok(self.items(&items))
    }

    pub async fn multi_exec(&self, mut commands: Vec<Command>) -> Result<Response, GatewayError> {
        self.check_length(&commands)?;
        let mut fixes = Vec::with_capacity(commands.len());
        for command in commands.iter_mut() {
            fixes.push(self.prepare(command)?);
        }
        let reply = self.upstream().transaction(&commands).await?;
        match reply {
            Value::Array(values) => {
                let items: Vec<Item> = values
                    .into_iter()
                    .zip(fixes.iter().chain(std::iter::repeat(&ReplyFix::None)))
                    .map(|(value, fix)| Item::Reply(fix.apply(value)))
                    .collect();
                Ok(self.items(&items))
            }
            Value::ServerError(e) => Err(GatewayError::Redis(error_text(&e))),
            Value::Nil => Err(GatewayError::Redis(
                "EXECABORT Transaction discarded".to_owned(),
            )),
            other => Err(GatewayError::Unavailable(format!(
                "unexpected reply to EXEC: {other:?}"
            ))),
        }
    }
}
