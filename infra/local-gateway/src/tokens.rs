//! The tokens the gateway accepts: `--api-token` (organisation `local`), `MQ_API_TOKENS`
//! (`org1:token1,org2:token2`), or a random one printed at start.

use mq_core::ids::OrgId;
use mq_core::time::Timestamp;
use mq_http::auth::{new_token, record_for};
use mq_store::{StoreError, TokenRecord, TokenStore};

/// The organisation of tokens given without one.
pub const LOCAL_ORG: &str = "local";

/// Parses `org1:token1,org2:token2`.
pub fn parse_token_list(list: &str) -> Result<Vec<(OrgId, String)>, String> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|pair| {
            let (org, token) = pair.split_once(':').ok_or_else(|| {
                format!(
                    "MQ_API_TOKENS entry `{org}` is not org:token",
                    org = pair.split(':').next().unwrap_or("")
                )
            })?;
            let org = OrgId::parse(org.trim()).map_err(|e| e.to_string())?;
            Ok((org, token.trim().to_owned()))
        })
        .collect()
}

/// Stores the given tokens (or a new random one when none is given) and returns the records
/// with, for a generated token, its secret to print.
pub async fn register(
    store: &dyn TokenStore,
    given: Vec<(OrgId, String)>,
    now: Timestamp,
) -> Result<Option<String>, String> {
    let (generated, records): (Option<String>, Vec<TokenRecord>) = if given.is_empty() {
        let org = OrgId::parse(LOCAL_ORG).map_err(|e| e.to_string())?;
        let (token, record) = new_token(org, "local-gateway", now).map_err(|e| e.to_string())?;
        (Some(token), vec![record])
    } else {
        let records = given
            .into_iter()
            .map(|(org, t)| record_for(&t, org, "local-gateway", now))
            .collect();
        (None, records)
    };
    for record in records {
        match store.put_token(&record).await {
            Ok(()) | Err(StoreError::AlreadyExists) => {}
            Err(e) => return Err(e.to_string()),
        }
    }
    Ok(generated)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_lists_pair_organisations_and_tokens() {
        let list = parse_token_list("acme:t1, umbrella:t2,").unwrap();
        assert_eq!(list.len(), 2);
        assert_eq!((list[1].0.as_str(), list[1].1.as_str()), ("umbrella", "t2"));
        assert!(parse_token_list("no-colon").is_err());
        assert!(parse_token_list("Bad Org:t").is_err());
    }
}
