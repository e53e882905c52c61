//! Token accounting per call and per phase, and the seed 000 §13.4 budgets as
//! enforced limits: a call whose prompt would not fit is refused before it is sent,
//! and the completion is capped (`max_tokens`) to what remains.

use std::collections::BTreeMap;

use dandori_config::TokenBudgets;
use serde::Serialize;

use crate::error::LlmError;
use crate::types::{Phase, Usage};

/// Token count of text when a provider reports none, by script, erring high so
/// that a budget the estimate admits is not overrun: English prose and
/// identifiers run at ~4 characters a token, but punctuation and operators (code,
/// JSON) at ~2, other alphabets (accented Latin, Cyrillic, Greek…) at ~2, and
/// CJK ideographs, kana and Hangul at about one token each (a Japanese request
/// counted at 4 characters a token was a quarter of its real size).
pub fn estimate_tokens(text: &str) -> u64 {
    // Quarter-tokens per character.
    let quarters: u64 = text
        .chars()
        .map(|c| match c {
            c if c.is_ascii_alphanumeric() || c == ' ' => 1,
            c if c.is_ascii() => 2,
            c if is_cjk(c) => 4,
            _ => 2,
        })
        .sum();
    quarters.div_ceil(4)
}

/// CJK ideographs, kana, Hangul, and their punctuation and full-width forms.
fn is_cjk(c: char) -> bool {
    matches!(u32::from(c),
        0x1100..=0x11FF        // Hangul Jamo
        | 0x2E80..=0x2FFF      // radicals
        | 0x3000..=0x30FF      // CJK punctuation, hiragana, katakana
        | 0x3100..=0x31FF      // bopomofo, katakana extensions
        | 0x3400..=0x4DBF      // extension A
        | 0x4E00..=0x9FFF      // unified ideographs
        | 0xAC00..=0xD7AF      // Hangul syllables
        | 0xF900..=0xFAFF      // compatibility ideographs
        | 0xFF00..=0xFFEF      // full-width forms
        | 0x20000..=0x3FFFF) // supplementary ideographs
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct PhaseUsage {
    pub calls: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Calls whose usage was estimated.
    pub estimated_calls: u64,
}

impl PhaseUsage {
    pub fn total(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LedgerSnapshot {
    pub phases: BTreeMap<Phase, PhaseUsage>,
}

impl LedgerSnapshot {
    pub fn total(&self) -> u64 {
        self.phases.values().map(PhaseUsage::total).sum()
    }
    pub fn phase(&self, phase: Phase) -> PhaseUsage {
        self.phases.get(&phase).copied().unwrap_or_default()
    }
}

/// Usage so far and the limits. Planning's limit is `planning + planning_context`
/// (the repository context is budgeted separately); reflection's is per call.
#[derive(Debug, Clone)]
pub struct TokenLedger {
    budgets: TokenBudgets,
    usage: LedgerSnapshot,
}

impl TokenLedger {
    pub fn new(budgets: TokenBudgets) -> TokenLedger {
        TokenLedger {
            budgets,
            usage: LedgerSnapshot::default(),
        }
    }

    pub fn snapshot(&self) -> LedgerSnapshot {
        self.usage.clone()
    }

    pub fn budgets(&self) -> &TokenBudgets {
        &self.budgets
    }

    /// Check a call with this prompt estimate fits; returns the largest completion
    /// it may ask for.
    pub fn admit(&self, phase: Phase, prompt_estimate: u64) -> Result<u64, LlmError> {
        let used_phase = match phase {
            Phase::Planning | Phase::Execution => self.usage.phase(phase).total(),
            // Per call.
            Phase::Reflection => 0,
        };
        let phase_limit = match phase {
            Phase::Planning => self
                .budgets
                .planning
                .saturating_add(self.budgets.planning_context),
            Phase::Reflection => self.budgets.reflection,
            Phase::Execution => self.budgets.task,
        };
        let used_task = self.usage.total();
        // Leave room for at least a minimal answer.
        let needed = prompt_estimate + 1;
        if used_phase + needed > phase_limit {
            return Err(LlmError::BudgetExceeded {
                phase,
                scope: "phase",
                used: used_phase,
                needed,
                limit: phase_limit,
            });
        }
        if used_task + needed > self.budgets.task {
            return Err(LlmError::BudgetExceeded {
                phase,
                scope: "task",
                used: used_task,
                needed,
                limit: self.budgets.task,
            });
        }
        let phase_room = phase_limit - used_phase - prompt_estimate;
        let task_room = self.budgets.task - used_task - prompt_estimate;
        Ok(phase_room.min(task_room))
    }

    pub fn record(&mut self, phase: Phase, usage: Usage) {
        let entry = self.usage.phases.entry(phase).or_default();
        entry.calls += 1;
        entry.prompt_tokens += usage.prompt_tokens;
        entry.completion_tokens += usage.completion_tokens;
        if usage.estimated {
            entry.estimated_calls += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(p: u64, c: u64) -> Usage {
        Usage {
            prompt_tokens: p,
            completion_tokens: c,
            estimated: false,
        }
    }

    #[test]
    fn enforces_phase_and_task_limits() {
        let mut ledger = TokenLedger::new(TokenBudgets {
            planning: 1000,
            planning_context: 500,
            reflection: 300,
            task: 2000,
            conversation: 2000,
            ..TokenBudgets::default()
        });
        assert_eq!(ledger.admit(Phase::Planning, 400).unwrap(), 1100);
        ledger.record(Phase::Planning, usage(400, 600));
        assert_eq!(ledger.admit(Phase::Planning, 400).unwrap(), 100);
        assert!(matches!(
            ledger.admit(Phase::Planning, 500),
            Err(LlmError::BudgetExceeded {
                scope: "phase",
                used: 1000,
                limit: 1500,
                ..
            })
        ));
        // Reflection is per call.
        assert_eq!(ledger.admit(Phase::Reflection, 100).unwrap(), 200);
        assert!(ledger.admit(Phase::Reflection, 300).is_err());
        ledger.record(Phase::Execution, usage(900, 0));
        assert!(matches!(
            ledger.admit(Phase::Execution, 200),
            Err(LlmError::BudgetExceeded {
                scope: "task",
                used: 1900,
                ..
            })
        ));
        assert_eq!(ledger.snapshot().total(), 1900);
    }

    #[test]
    fn estimates_by_script() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("abcd"), 1);
        assert_eq!(estimate_tokens("abcde"), 2);
        // Code: operators and brackets weigh more than letters.
        assert_eq!(estimate_tokens("a(b);"), 2);
        assert_eq!(estimate_tokens("{\"k\": [1, 2]}"), 6);
        // Japanese: one token a character, not a quarter.
        assert_eq!(estimate_tokens("ログイン機能を追加する"), 11);
        assert_eq!(estimate_tokens("한국어"), 3);
        assert_eq!(estimate_tokens("Привет"), 3);
    }
}
