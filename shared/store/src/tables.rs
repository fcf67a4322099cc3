//! The names of the tables, as deployed (from the environment) or locally (from a prefix).

/// Physical table names. The template's logical ids map to fields: `QueuesTable` → `queues`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableNames {
    pub queues: String,
    pub pull_requests: String,
    pub test_runs: String,
    pub test_health: String,
    pub api_tokens: String,
    pub idempotency_keys: String,
}

/// (logical id in `template.yaml`, environment variable holding the deployed name).
pub const TABLES: [(&str, &str); 6] = [
    ("QueuesTable", "MQ_QUEUES_TABLE"),
    ("PullRequestsTable", "MQ_PULL_REQUESTS_TABLE"),
    ("TestRunsTable", "MQ_TEST_RUNS_TABLE"),
    ("TestHealthTable", "MQ_TEST_HEALTH_TABLE"),
    ("ApiTokensTable", "MQ_API_TOKENS_TABLE"),
    ("IdempotencyKeysTable", "MQ_IDEMPOTENCY_KEYS_TABLE"),
];

impl TableNames {
    /// Local names: the prefix and the logical id without `Table` (`mq-Queues`).
    pub fn with_prefix(prefix: &str) -> Self {
        let name = |logical: &str| format!("{prefix}{}", logical.trim_end_matches("Table"));
        Self {
            queues: name(TABLES[0].0),
            pull_requests: name(TABLES[1].0),
            test_runs: name(TABLES[2].0),
            test_health: name(TABLES[3].0),
            api_tokens: name(TABLES[4].0),
            idempotency_keys: name(TABLES[5].0),
        }
    }

    /// Deployed names from the environment; missing variables fall back to `mq-` names.
    pub fn from_env() -> Self {
        let local = Self::with_prefix("mq-");
        let get = |i: usize, default: &str| {
            std::env::var(TABLES[i].1).unwrap_or_else(|_| default.to_owned())
        };
        Self {
            queues: get(0, &local.queues),
            pull_requests: get(1, &local.pull_requests),
            test_runs: get(2, &local.test_runs),
            test_health: get(3, &local.test_health),
            api_tokens: get(4, &local.api_tokens),
            idempotency_keys: get(5, &local.idempotency_keys),
        }
    }

    /// The physical name of a table by its logical id in the template.
    pub fn by_logical_id(&self, logical_id: &str) -> Option<&str> {
        match logical_id {
            "QueuesTable" => Some(&self.queues),
            "PullRequestsTable" => Some(&self.pull_requests),
            "TestRunsTable" => Some(&self.test_runs),
            "TestHealthTable" => Some(&self.test_health),
            "ApiTokensTable" => Some(&self.api_tokens),
            "IdempotencyKeysTable" => Some(&self.idempotency_keys),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_names_drop_the_table_suffix() {
        let names = TableNames::with_prefix("t1-");
        assert_eq!(names.queues, "t1-Queues");
        assert_eq!(names.by_logical_id("ApiTokensTable"), Some("t1-ApiTokens"));
        assert_eq!(names.by_logical_id("Nope"), None);
    }
}
