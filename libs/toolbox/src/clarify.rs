//! `clarify`: ask the user a question (with up to four suggested answers). The turn is parked
//! until the answer comes, and resumes with it; nobody answering in time is an answer too.

use hermes_core::ToolsetName;
use serde_json::{Value, json};

use hermes_core::{InteractionAnswer, InteractionKind};
use hermes_tools::{Interaction, SimpleTool, ToolCtx, ToolError, ToolSpec, object_schema, required_str};

pub const MAX_CHOICES: usize = 4;

pub struct ClarifyTool;

impl SimpleTool for ClarifyTool {
    const SPEC: ToolSpec = ToolSpec::new(
        "clarify",
        ToolsetName::Clarify,
        "Ask the user a question when you cannot go on without their decision or information. \
                The conversation pauses until they answer. Offer up to 4 short choices when the answer is one of a \
                few options; the user may still answer freely.",
    )
    .read_only()
    .sequential();

    fn parameters(&self) -> Value {
        object_schema(
            json!({
                "question": { "type": "string" },
                "choices": { "type": "array", "items": { "type": "string" }, "maxItems": MAX_CHOICES }
            }),
            &["question"],
        )
    }

    async fn run(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        let question = required_str(&args, "question")?.trim();
        if question.is_empty() {
            return Err(ToolError::RespondToModel("question is empty".into()));
        }
        let choices: Vec<String> = match args.get("choices") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
            Some(_) => return Err(ToolError::RespondToModel("choices must be an array of strings".into())),
        };
        if choices.len() > MAX_CHOICES {
            return Err(ToolError::RespondToModel(format!("at most {MAX_CHOICES} choices")));
        }
        match ctx.interaction.answer_for(&ctx.call_id) {
            Some(r) => match &r.answer {
                InteractionAnswer::Text { text } => Ok(format!("The user answered: {text}")),
                // An approval's choice cannot answer a question: as good as no answer.
                InteractionAnswer::Expired { .. } | InteractionAnswer::Approval { .. } => Ok(
                    "[The user did not respond in time. Go on with your best judgement and say which assumption you \
                     made.]"
                        .into(),
                ),
            },
            None => Err(ToolError::Park(Interaction {
                kind: InteractionKind::Clarify,
                prompt: json!({ "question": question, "choices": choices }),
            })),
        }
    }
}
