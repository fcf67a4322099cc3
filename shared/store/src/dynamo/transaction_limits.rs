//! The actions of a `TransactWriteItems`, what one may hold, and how writes are grouped to
//! stay within it.
//!
//! DynamoDB refuses a transaction of more than 100 actions, or whose items weigh more than
//! 4 MB together; an item itself weighs at most 400 KB. Item weights are estimated with
//! DynamoDB's sizing rules ([`item_bytes`]) and groups are kept under a lower budget
//! ([`TRANSACTION_BUDGET`]), so that an estimate a little short never makes a refused
//! transaction.

use super::codec::Item;
use crate::error::StoreError;
use crate::port::StoreResult;
use aws_sdk_dynamodb::types::{AttributeValue, Delete, Put, TransactWriteItem};

/// DynamoDB refuses transactions of more than this many actions.
pub(crate) const MAX_TRANSACTION_ITEMS: usize = 100;

/// DynamoDB refuses transactions whose items weigh more than this together.
pub(crate) const DYNAMODB_TRANSACTION_BYTES: usize = 4_000_000;

/// The weight this adapter puts in one transaction at most: three quarters of DynamoDB's.
pub(crate) const TRANSACTION_BUDGET: usize = 3_000_000;

/// A transaction action and what it weighs against the transaction's size limit.
#[derive(Clone, Debug)]
pub(crate) struct Write {
    pub action: TransactWriteItem,
    pub bytes: usize,
}

impl Write {
    /// A put of `item` into `table`: it weighs the item.
    pub fn put(table: &str, item: Item) -> StoreResult<Self> {
        let bytes = item_bytes(&item);
        Ok(Self {
            action: put_action(table, item)?,
            bytes,
        })
    }

    /// A delete of the item at `key` of `table`: it weighs the key.
    pub fn delete(table: &str, key: Item) -> StoreResult<Self> {
        let bytes = item_bytes(&key);
        Ok(Self {
            action: delete_action(table, key)?,
            bytes,
        })
    }
}

/// A put of `item` into `table`, as a transaction action.
pub(crate) fn put_action(table: &str, item: Item) -> StoreResult<TransactWriteItem> {
    let put = Put::builder()
        .table_name(table)
        .set_item(Some(item))
        .build()
        .map_err(StoreError::internal)?;
    Ok(TransactWriteItem::builder().put(put).build())
}

/// A delete of the item at `key` of `table`, as a transaction action.
pub(crate) fn delete_action(table: &str, key: Item) -> StoreResult<TransactWriteItem> {
    let delete = Delete::builder()
        .table_name(table)
        .set_key(Some(key))
        .build()
        .map_err(StoreError::internal)?;
    Ok(TransactWriteItem::builder().delete(delete).build())
}

/// Whether `writes` fit one transaction.
pub(crate) fn fit_one_transaction(writes: &[Write]) -> bool {
    writes.len() <= MAX_TRANSACTION_ITEMS && total_bytes(writes) <= TRANSACTION_BUDGET
}

/// The weight of `writes` together.
pub(crate) fn total_bytes(writes: &[Write]) -> usize {
    writes.iter().map(|w| w.bytes).sum()
}

/// `writes` in order, in groups of at most `max_items` that each stay within the budget
/// (a write heavier than the budget alone goes in a group of its own).
pub(crate) fn groups(writes: Vec<Write>, max_items: usize) -> Vec<Vec<Write>> {
    groups_by(writes, |w| w.bytes, max_items)
}

/// [`groups`] of anything that holds a write, weighed by `bytes`.
pub(crate) fn groups_by<T>(
    writes: Vec<T>,
    bytes: impl Fn(&T) -> usize,
    max_items: usize,
) -> Vec<Vec<T>> {
    let mut groups: Vec<Vec<T>> = Vec::new();
    let mut weight = 0;
    for write in writes {
        let heavy = bytes(&write);
        let full = groups
            .last()
            .is_none_or(|group| group.len() >= max_items || weight + heavy > TRANSACTION_BUDGET);
        if full {
            groups.push(Vec::new());
            weight = 0;
        }
        weight += heavy;
        groups
            .last_mut()
            .expect("a group was just made")
            .push(write);
    }
    groups
}

/// The weight of a transaction of `actions`, from the items they put and the keys they name.
/// DynamoDB-compatible test servers do not check the 4 MB limit, so debug builds check it
/// here on every transaction.
pub(crate) fn actions_bytes(actions: &[TransactWriteItem]) -> usize {
    actions.iter().map(action_bytes).sum()
}

fn action_bytes(action: &TransactWriteItem) -> usize {
    let put = action.put().map(|p| item_bytes(p.item()));
    let delete = action.delete().map(|d| item_bytes(d.key()));
    let update = action
        .update()
        .map(|u| item_bytes(u.key()) + u.update_expression().len());
    let check = action.condition_check().map(|c| item_bytes(c.key()));
    [put, delete, update, check].into_iter().flatten().sum()
}

/// An item's size as DynamoDB counts it: each attribute's name and value, in bytes.
pub fn item_bytes(item: &Item) -> usize {
    item.iter()
        .map(|(name, value)| name.len() + value_bytes(value))
        .sum()
}

/// A value's size as DynamoDB counts it, rounded up where DynamoDB's rule is approximate
/// (numbers: one byte per two significant digits, plus one; here, one per digit).
fn value_bytes(value: &AttributeValue) -> usize {
    match value {
        AttributeValue::S(s) => s.len(),
        AttributeValue::N(n) => n.len() + 1,
        AttributeValue::B(b) => b.as_ref().len(),
        AttributeValue::Ss(set) => set.iter().map(String::len).sum(),
        AttributeValue::Ns(set) => set.iter().map(|n| n.len() + 1).sum(),
        AttributeValue::Bs(set) => set.iter().map(|b| b.as_ref().len()).sum(),
        // Lists and maps: 3 bytes, and 1 more per element.
        AttributeValue::L(list) => 3 + list.iter().map(|v| 1 + value_bytes(v)).sum::<usize>(),
        AttributeValue::M(map) => {
            3 + map
                .iter()
                .map(|(k, v)| 1 + k.len() + value_bytes(v))
                .sum::<usize>()
        }
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn weighing(bytes: usize) -> Write {
        Write {
            action: TransactWriteItem::builder().build(),
            bytes,
        }
    }

    fn sizes(groups: &[Vec<Write>]) -> Vec<(usize, usize)> {
        groups.iter().map(|g| (g.len(), total_bytes(g))).collect()
    }

    #[test]
    fn an_item_weighs_its_names_and_values() {
        let item: Item = HashMap::from([
            ("pk".to_owned(), AttributeValue::S("q-1".to_owned())),
            ("version".to_owned(), AttributeValue::N("12".to_owned())),
            (
                "tags".to_owned(),
                AttributeValue::L(vec![
                    AttributeValue::S("ab".to_owned()),
                    AttributeValue::Bool(true),
                ]),
            ),
            (
                "m".to_owned(),
                AttributeValue::M(HashMap::from([(
                    "k".to_owned(),
                    AttributeValue::S("é".to_owned()),
                )])),
            ),
        ]);
        // pk 2+3, version 7+3, tags 4+3+(1+2)+(1+1), m 1+3+(1+1+2): "é" is 2 UTF-8 bytes.
        assert_eq!(item_bytes(&item), 5 + 10 + 12 + 8);
    }

    #[test]
    fn groups_hold_at_most_the_items_and_the_bytes_a_transaction_may() {
        let writes = (0..250).map(|_| weighing(10)).collect();
        assert_eq!(
            sizes(&groups(writes, 99)),
            [(99, 990), (99, 990), (52, 520)]
        );

        let heavy = 700_000;
        let writes = (0..10).map(|_| weighing(heavy)).collect::<Vec<_>>();
        assert!(!fit_one_transaction(&writes), "7 MB in 10 items");
        let split = groups(writes, 99);
        assert_eq!(
            sizes(&split),
            [(4, 4 * heavy), (4, 4 * heavy), (2, 2 * heavy)]
        );
        assert!(split.iter().all(|g| fit_one_transaction(g)));
    }

    #[test]
    fn a_write_heavier_than_the_budget_goes_alone() {
        let writes = vec![weighing(10), weighing(TRANSACTION_BUDGET + 1), weighing(10)];
        assert_eq!(
            sizes(&groups(writes, 99)),
            [(1, 10), (1, TRANSACTION_BUDGET + 1), (1, 10)]
        );
    }
}
