//! A tested commit read back as the steps that built it, for `squash` and `rebase` merges.
//!
//! A test branch is its base plus one merge commit per pull request, in order; each merge
//! commit's first parent is the state before it and its second parent the pull request's head.
//! Walking first parents back from the tip gives, for each pull request, the exact tree the
//! target must have once it is in: the trees of the commits a squash or rebase writes.

use crate::error::HostResult;
use crate::port::MergeOutcome;
use mq_core::engine::BranchPr;
use mq_core::ids::Sha;
use std::future::Future;

/// A commit as the merge planner needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CommitInfo {
    pub sha: Sha,
    pub tree: String,
    pub parents: Vec<Sha>,
}

/// Reads commits from the host.
pub(crate) trait CommitSource {
    fn commit(&self, sha: &Sha) -> impl Future<Output = HostResult<CommitInfo>> + Send;
}

/// One pull request's merge in the tested commit.
#[derive(Debug, Clone)]
pub(crate) struct Step {
    pub pr: BranchPr,
    /// The tree with this pull request and every one before it merged.
    pub tree: String,
    /// The commit this pull request was merged onto.
    pub before: Sha,
}

#[derive(Debug, Clone)]
pub(crate) struct TestedChain {
    /// The commit the first pull request was merged onto.
    pub base: CommitInfo,
    pub steps: Vec<Step>,
}

/// The chain of `tested` (see [`read_chain`]), checked to have been built on the content of
/// `actual` (the target now); a refusal of the merge otherwise.
pub(crate) async fn read_chain_onto<S: CommitSource>(
    source: &S,
    actual: &Sha,
    tested: &Sha,
    prs: &[BranchPr],
) -> HostResult<Result<TestedChain, MergeOutcome>> {
    let chain = match read_chain(source, tested, prs).await? {
        Ok(chain) => chain,
        Err(detail) => return Ok(Err(MergeOutcome::Rejected { pr: None, detail })),
    };
    if chain.base.tree != source.commit(actual).await?.tree {
        return Ok(Err(MergeOutcome::Rejected {
            pr: None,
            detail: format!(
                "the tested commit {} was built on content other than the target's",
                tested.short()
            ),
        }));
    }
    Ok(Ok(chain))
}

/// Walks `tested` back through one merge commit per pull request of `prs` (last first).
/// `Ok(Err(reason))` when the tested commit is not shaped like a test branch of `prs`.
pub(crate) async fn read_chain<S: CommitSource>(
    source: &S,
    tested: &Sha,
    prs: &[BranchPr],
) -> HostResult<Result<TestedChain, String>> {
    let mut current = source.commit(tested).await?;
    let mut steps = Vec::with_capacity(prs.len());
    for pr in prs.iter().rev() {
        let is_its_merge = current.parents.len() == 2 && current.parents[1] == pr.head_sha;
        if !is_its_merge {
            return Ok(Err(format!(
                "the tested commit {} holds no merge of #{} at {}",
                tested.short(),
                pr.pr,
                pr.head_sha.short()
            )));
        }
        let before = current.parents[0].clone();
        steps.push(Step {
            pr: pr.clone(),
            tree: current.tree.clone(),
            before: before.clone(),
        });
        current = source.commit(&before).await?;
    }
    steps.reverse();
    Ok(Ok(TestedChain {
        base: current,
        steps,
    }))
}

/// The message of a test branch's merge commit for `pr`. A stamped merge commit names its
/// stamp's run in a trailer, so every build of a group is a commit of its own (CI results on
/// an earlier build must not be taken for a new one), while every test branch holding that
/// build's merge holds the same commit. An unstamped one names the branch being built, if any.
/// A CI skip instruction in the title is written in parentheses ([`without_skip_instructions`]).
pub(crate) fn merge_message(pr: &BranchPr, test_branch: Option<&str>) -> String {
    let title = without_skip_instructions(&pr.title);
    let subject = format!("Merge pull request #{}: {title}", pr.pr);
    match (&pr.stamp, test_branch) {
        (Some(stamp), _) => format!("{subject}\n\nMerge-Queue-Run: {}", stamp.run_id),
        (None, Some(branch)) => format!("{subject}\n\nTest-Branch: {branch}"),
        (None, None) => subject,
    }
}

/// `title` with each bracketed CI skip instruction (`[skip ci]`, `[ci skip]`, `[no ci]`,
/// `[skip actions]`, any `[skip <name>]` or `[<name> skip]`, in any case) in parentheses
/// instead. The title is written into the merge commit at the head of the pull request's test
/// branch, and GitHub Actions (as most CI services) starts nothing for a push whose head
/// commit holds such an instruction: the branch would never be tested, and the pull request
/// would fail on the testing timeout.
fn without_skip_instructions(title: &str) -> String {
    let mut written = String::with_capacity(title.len());
    let mut rest = title;
    while let Some(open) = rest.find('[') {
        written.push_str(&rest[..open]);
        let inside = &rest[open + 1..];
        match inside.find(']') {
            Some(close) if is_skip_instruction(&inside[..close]) => {
                written.push('(');
                written.push_str(&inside[..close]);
                written.push(')');
                rest = &inside[close + 1..];
            }
            _ => {
                written.push('[');
                rest = inside;
            }
        }
    }
    written.push_str(rest);
    written
}

/// Whether the words between brackets make a CI skip instruction.
fn is_skip_instruction(words: &str) -> bool {
    let lower = words.to_ascii_lowercase();
    let words: Vec<&str> = lower.split_whitespace().collect();
    matches!(words.as_slice(), ["skip", _] | [_, "skip"] | ["no", "ci"])
}

/// The message of the one commit a squash merge writes for `pr`.
pub(crate) fn squash_message(pr: &BranchPr) -> String {
    format!("{} (#{})", pr.title, pr.pr)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skip_instructions_in_a_title_are_written_in_parentheses() {
        let cases = [
            ("Bump version [skip ci]", "Bump version (skip ci)"),
            ("[CI SKIP] docs", "(CI SKIP) docs"),
            ("[no ci][skip actions] both", "(no ci)(skip actions) both"),
            ("Fix [skip  netlify]", "Fix (skip  netlify)"),
            ("[actions skip]", "(actions skip)"),
        ];
        for (title, written) in cases {
            assert_eq!(without_skip_instructions(title), written, "{title}");
        }
    }

    #[test]
    fn other_brackets_are_kept() {
        for title in [
            "[WIP] parser",
            "Fix a[0] bound [#12]",
            "[skip] alone",
            "unclosed [skip ci",
            "[skip ci now]",
            "] [",
        ] {
            assert_eq!(without_skip_instructions(title), title);
        }
    }
}
