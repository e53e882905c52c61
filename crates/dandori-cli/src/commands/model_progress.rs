//! Model calls in flight, on stderr: a line as each call is sent, then its
//! elapsed time and tokens streamed every 5 s, then how it ended
//! (`dandori_llm::progress`). With `--json`, the same reports as JSON lines
//! (`{"event": "model_progress", …}`), stdout keeping its one JSON answer.

use crate::output;

pub fn install(json: bool) {
    dandori_llm::progress::set_observer(dandori_llm::progress::DEFAULT_INTERVAL, move |p| {
        if json {
            let mut value = serde_json::json!({"event": "model_progress"});
            if let (Some(obj), Ok(serde_json::Value::Object(fields))) =
                (value.as_object_mut(), serde_json::to_value(p))
            {
                obj.extend(fields);
            }
            output::progress(&value.to_string());
        } else {
            output::progress(&dandori_llm::progress::render_line(p));
        }
    });
}
