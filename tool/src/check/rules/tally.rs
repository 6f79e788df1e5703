//! The rules' counts and findings: how often each rule was exercised, by whom, and the violations
//! found, kept apart from the conversation's state so that both can be borrowed at once.

use acp_rpc::rules::{RuleId, Tier};
use acp_types::support::rpc::Role;
use std::collections::HashMap;

use crate::check::report::{Report, RuleViolation, Status};

/// Counts and findings, apart from the conversation's state so both can be borrowed at once.
#[derive(Debug, Default)]
pub(super) struct Tally {
    pub(super) exercised: HashMap<(RuleId, Role), usize>,
    pub(super) violations: Vec<RuleViolation>,
}

impl Tally {
    pub(super) fn exercise(&mut self, rule: RuleId, by: Role) {
        *self.exercised.entry((rule, by)).or_default() += 1;
    }

    /// A violation found on `report`'s message: a MUST one makes the message an error.
    pub(super) fn violate(&mut self, report: &mut Report, rule: RuleId, by: Role, detail: String) {
        let violation = RuleViolation::new(rule, by, report.line, detail);
        if violation.tier == Tier::Must {
            report.status = Status::Error;
        }
        report.violations.push(violation.clone());
        self.violations.push(violation);
    }

    /// A violation found at the end of the conversation (`line`: where its cause is).
    pub(super) fn late(&mut self, rule: RuleId, by: Role, line: usize, detail: String) -> RuleViolation {
        let violation = RuleViolation::new(rule, by, line, detail);
        self.violations.push(violation.clone());
        violation
    }
}
