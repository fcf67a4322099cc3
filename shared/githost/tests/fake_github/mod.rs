//! A stand-in for the part of GitHub's REST API whose answers depend on earlier calls: refs,
//! commits, the merges API and issue comments of one repository, `acme/rocket`.
//!
//! Commit ids are derived from what makes the commit, as git derives them: writing the same
//! commit twice with the git data API gives the same id. A merge made by the merges API carries
//! the time GitHub made it, so merging the same head twice gives two ids (with the same tree).
//! An answer can be lost: the call takes effect and is answered 502, as when GitHub's answer
//! never reaches the caller. Calls can hang: they take no effect and are not answered, as when
//! the caller is stopped before GitHub gets to them.
//!
//! Comments the adapter posts are written by the token's user, [`TOKEN_USER`]; others are
//! added with [`FakeGitHub::comment_by`].

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use wiremock::matchers::path_regex;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

const REPO: &str = "/repos/acme/rocket";

/// The login of the user the tests' token belongs to.
pub const TOKEN_USER: &str = "queue-keeper";

#[derive(Debug, Clone, PartialEq)]
pub struct Commit {
    pub sha: String,
    pub tree: String,
    pub parents: Vec<String>,
    pub message: String,
    pub author: Value,
    pub committer: Value,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comment {
    pub id: u64,
    pub body: String,
    pub author: String,
}

/// A call whose answer is lost: the `nth` call (from 0) of `method` on a path ending `suffix`.
struct Loss {
    method: &'static str,
    suffix: String,
    nth: usize,
}

#[derive(Default)]
struct State {
    commits: HashMap<String, Commit>,
    branches: HashMap<String, String>,
    comments: Vec<Comment>,
    /// The merges API's clock: each merge it makes is one tick later.
    merges_made: u64,
    losses: Vec<Loss>,
    /// Calls seen so far, per method and path.
    seen: HashMap<(String, String), usize>,
    /// Calls of a method on a path ending with a suffix hang once that many were answered.
    hang: Option<(&'static str, String, usize)>,
    /// Calls answered, per method and path suffix of `hang`.
    answered_before_hang: usize,
}

#[derive(Clone, Default)]
pub struct FakeGitHub {
    state: Arc<Mutex<State>>,
}

impl FakeGitHub {
    /// Answers every call under `/repos/acme/rocket/` on `server`.
    pub async fn mount(&self, server: &MockServer) {
        Mock::given(path_regex(format!("^{REPO}/")))
            .respond_with(self.clone())
            .mount(server)
            .await;
    }

    /// A commit of `tree` on `parents`, as if pushed.
    pub fn commit(&self, sha: &str, tree: &str, parents: &[&str]) {
        let commit = Commit {
            sha: sha.to_owned(),
            tree: tree.to_owned(),
            parents: parents.iter().map(|p| (*p).to_owned()).collect(),
            message: format!("Commit {sha}"),
            author: person("Monalisa Octocat", "octocat@github.com"),
            committer: person("Monalisa Octocat", "octocat@github.com"),
        };
        self.state().commits.insert(sha.to_owned(), commit);
    }

    pub fn set_branch(&self, branch: &str, sha: &str) {
        self.state()
            .branches
            .insert(branch.to_owned(), sha.to_owned());
    }

    pub fn branch(&self, branch: &str) -> Option<String> {
        self.state().branches.get(branch).cloned()
    }

    pub fn get_commit(&self, sha: &str) -> Commit {
        self.state().commits[sha].clone()
    }

    pub fn comments(&self) -> Vec<Comment> {
        self.state().comments.clone()
    }

    /// A comment `author` wrote on a pull request.
    pub fn comment_by(&self, author: &str, body: &str) {
        let mut state = self.state();
        let comment = Comment {
            id: 1000 + state.comments.len() as u64,
            body: body.to_owned(),
            author: author.to_owned(),
        };
        state.comments.push(comment);
    }

    /// The `nth` call (from 0) of `method` on a path ending with `suffix` takes effect, and its
    /// answer is a 502.
    pub fn lose_answer(&self, method: &'static str, suffix: &str, nth: usize) {
        self.state().losses.push(Loss {
            method,
            suffix: suffix.to_owned(),
            nth,
        });
    }

    /// Once `n` calls of `method` on a path ending with `suffix` were answered, the next ones
    /// take no effect and get no answer (for an hour), until [`Self::stop_hanging`].
    pub fn hang_after(&self, method: &'static str, suffix: &str, n: usize) {
        let mut state = self.state();
        state.hang = Some((method, suffix.to_owned(), n));
        state.answered_before_hang = 0;
    }

    pub fn stop_hanging(&self) {
        self.state().hang = None;
    }

    /// How many merges the merges API made.
    pub fn merges_made(&self) -> u64 {
        self.state().merges_made
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap()
    }
}

impl Respond for FakeGitHub {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let mut state = self.state();
        let method = request.method.as_str().to_owned();
        let path = request.url.path().to_owned();
        if let Some((hung, suffix, n)) = state.hang.clone()
            && hung == method
            && path.ends_with(&suffix)
        {
            if state.answered_before_hang >= n {
                return ResponseTemplate::new(504).set_delay(std::time::Duration::from_secs(3600));
            }
            state.answered_before_hang += 1;
        }
        let answer = state.answer(&method, &path, request);
        let seen = state
            .seen
            .entry((method.clone(), path.clone()))
            .or_default();
        let nth = *seen;
        *seen += 1;
        let lost = state
            .losses
            .iter()
            .any(|l| l.method == method && path.ends_with(&l.suffix) && l.nth == nth);
        if lost {
            return ResponseTemplate::new(502).set_body_json(json!({ "message": "Server Error" }));
        }
        answer
    }
}

impl State {
    fn answer(&mut self, method: &str, path: &str, request: &Request) -> ResponseTemplate {
        let rest = path.strip_prefix(REPO).unwrap_or_default();
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        if let Some(branch) = rest.strip_prefix("/git/ref/heads/") {
            return self.get_ref(branch);
        }
        if let Some(branch) = rest.strip_prefix("/git/refs/heads/") {
            return match method {
                "PATCH" => self.update_ref(branch, &body),
                "DELETE" => self.delete_ref(branch),
                _ => not_found(),
            };
        }
        if let Some(sha) = rest.strip_prefix("/git/commits/") {
            return self.get_commit(sha);
        }
        if let Some(id) = rest.strip_prefix("/issues/comments/") {
            return self.update_comment(id, &body);
        }
        if let Some((base, head)) = rest
            .strip_prefix("/compare/")
            .and_then(|r| r.split_once("..."))
        {
            return self.compare(base, head);
        }
        match (method, rest) {
            ("POST", "/git/refs") => self.create_ref(&body),
            ("POST", "/git/commits") => self.create_commit(&body),
            ("POST", "/merges") => self.merge(&body),
            ("GET", r) if r.ends_with("/comments") => self.list_comments(),
            ("POST", r) if r.ends_with("/comments") => self.create_comment(&body),
            _ => not_found(),
        }
    }

    fn get_ref(&self, branch: &str) -> ResponseTemplate {
        match self.branches.get(branch) {
            Some(sha) => ok(ref_json(branch, sha)),
            None => not_found(),
        }
    }

    fn create_ref(&mut self, body: &Value) -> ResponseTemplate {
        let name = body["ref"].as_str().unwrap_or_default();
        let branch = name.strip_prefix("refs/heads/").unwrap_or(name).to_owned();
        let sha = body["sha"].as_str().unwrap_or_default().to_owned();
        if self.branches.contains_key(&branch) {
            return refused(422, "Reference already exists");
        }
        self.branches.insert(branch.clone(), sha.clone());
        ResponseTemplate::new(201).set_body_json(ref_json(&branch, &sha))
    }

    fn update_ref(&mut self, branch: &str, body: &Value) -> ResponseTemplate {
        let sha = body["sha"].as_str().unwrap_or_default().to_owned();
        let Some(old) = self.branches.get(branch).cloned() else {
            return refused(422, "Reference does not exist");
        };
        let force = body["force"].as_bool().unwrap_or(false);
        if !force && !self.contains(&sha, &old) {
            return refused(422, "Update is not a fast forward");
        }
        self.branches.insert(branch.to_owned(), sha.clone());
        ok(ref_json(branch, &sha))
    }

    fn delete_ref(&mut self, branch: &str) -> ResponseTemplate {
        match self.branches.remove(branch) {
            Some(_) => ResponseTemplate::new(204),
            None => refused(422, "Reference does not exist"),
        }
    }

    fn get_commit(&self, sha: &str) -> ResponseTemplate {
        match self.commits.get(sha) {
            Some(commit) => ok(git_commit_json(commit)),
            None => not_found(),
        }
    }

    /// `POST /git/commits`: the id is derived from the payload, as git derives it from the
    /// commit's content; GitHub fills in an author and committer left out.
    fn create_commit(&mut self, body: &Value) -> ResponseTemplate {
        let parents: Vec<String> = body["parents"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p.as_str().map(str::to_owned))
            .collect();
        let commit = Commit {
            sha: id_of(&body.to_string()),
            tree: body["tree"].as_str().unwrap_or_default().to_owned(),
            parents,
            message: body["message"].as_str().unwrap_or_default().to_owned(),
            author: body.get("author").cloned().unwrap_or(Value::Null),
            committer: body.get("committer").cloned().unwrap_or(Value::Null),
        };
        let answer = git_commit_json(&commit);
        self.commits.insert(commit.sha.clone(), commit);
        ResponseTemplate::new(201).set_body_json(answer)
    }

    /// `POST /merges`: 204 when the head is already in the base branch, else a merge commit
    /// whose tree depends on the two trees only, made at GitHub's time.
    fn merge(&mut self, body: &Value) -> ResponseTemplate {
        let base = body["base"].as_str().unwrap_or_default().to_owned();
        let head = body["head"].as_str().unwrap_or_default().to_owned();
        let Some(tip) = self.branches.get(&base).cloned() else {
            return refused(404, "Base does not exist");
        };
        let (Some(tip_commit), Some(head_commit)) =
            (self.commits.get(&tip), self.commits.get(&head))
        else {
            return refused(404, "Head does not exist");
        };
        if self.contains(&tip, &head) {
            return ResponseTemplate::new(204);
        }
        self.merges_made += 1;
        let tree = id_of(&format!("merge {} {}", tip_commit.tree, head_commit.tree));
        let commit = Commit {
            sha: id_of(&format!("{tree} {tip} {head} at {}", self.merges_made)),
            tree,
            parents: vec![tip, head],
            message: body["commit_message"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            author: person("rocket-queue[bot]", "bot@users.noreply.github.com"),
            committer: person("GitHub", "noreply@github.com"),
        };
        self.branches.insert(base, commit.sha.clone());
        let answer = merge_json(&commit);
        self.commits.insert(commit.sha.clone(), commit);
        ResponseTemplate::new(201).set_body_json(answer)
    }

    /// `GET /compare/{base}...{head}` of two commits (abridged: one commit behind or ahead
    /// stands for any number).
    fn compare(&self, base: &str, head: &str) -> ResponseTemplate {
        if !self.commits.contains_key(base) || !self.commits.contains_key(head) {
            return not_found();
        }
        let behind_by = u32::from(!self.contains(head, base));
        let ahead_by = u32::from(!self.contains(base, head));
        let status = match (ahead_by, behind_by) {
            (0, 0) => "identical",
            (_, 0) => "ahead",
            (0, _) => "behind",
            _ => "diverged",
        };
        ok(json!({"status": status, "ahead_by": ahead_by, "behind_by": behind_by}))
    }

    /// Whether `ancestor` is `sha` or one of its ancestors.
    fn contains(&self, sha: &str, ancestor: &str) -> bool {
        let mut pending = vec![sha.to_owned()];
        while let Some(next) = pending.pop() {
            if next == ancestor {
                return true;
            }
            if let Some(commit) = self.commits.get(&next) {
                pending.extend(commit.parents.iter().cloned());
            }
        }
        false
    }

    fn list_comments(&self) -> ResponseTemplate {
        let listed: Vec<Value> = self
            .comments
            .iter()
            .map(|c| json!({ "id": c.id, "body": c.body, "user": { "login": c.author } }))
            .collect();
        ok(json!(listed))
    }

    fn create_comment(&mut self, body: &Value) -> ResponseTemplate {
        let comment = Comment {
            id: 1000 + self.comments.len() as u64,
            body: body["body"].as_str().unwrap_or_default().to_owned(),
            author: TOKEN_USER.to_owned(),
        };
        self.comments.push(comment.clone());
        ResponseTemplate::new(201).set_body_json(json!({ "id": comment.id, "body": comment.body }))
    }

    fn update_comment(&mut self, id: &str, body: &Value) -> ResponseTemplate {
        let text = body["body"].as_str().unwrap_or_default().to_owned();
        match self.comments.iter_mut().find(|c| c.id.to_string() == id) {
            Some(comment) => {
                comment.body = text;
                ok(json!({ "id": comment.id, "body": comment.body }))
            }
            None => not_found(),
        }
    }
}

/// A 40-hex id derived from `content`.
fn id_of(content: &str) -> String {
    hex::encode(Sha256::digest(content.as_bytes()))[..40].to_owned()
}

fn person(name: &str, email: &str) -> Value {
    json!({ "name": name, "email": email, "date": "2026-11-25T15:46:02Z" })
}

fn ok(body: Value) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(body)
}

fn not_found() -> ResponseTemplate {
    refused(404, "Not Found")
}

fn refused(status: u16, message: &str) -> ResponseTemplate {
    ResponseTemplate::new(status).set_body_json(
        json!({ "message": message, "documentation_url": "https://docs.github.com/rest" }),
    )
}

fn ref_json(branch: &str, sha: &str) -> Value {
    json!({
        "ref": format!("refs/heads/{branch}"),
        "object": { "type": "commit", "sha": sha }
    })
}

/// A commit as the git data API answers it.
fn git_commit_json(commit: &Commit) -> Value {
    json!({
        "sha": commit.sha,
        "author": commit.author, "committer": commit.committer,
        "message": commit.message,
        "tree": { "sha": commit.tree },
        "parents": commit.parents.iter().map(|p| json!({ "sha": p })).collect::<Vec<_>>(),
        "verification": { "verified": false, "reason": "unsigned" }
    })
}

/// A commit as the merges API answers it (the commits API's shape).
fn merge_json(commit: &Commit) -> Value {
    json!({
        "sha": commit.sha,
        "commit": {
            "author": commit.author, "committer": commit.committer,
            "message": commit.message, "tree": { "sha": commit.tree }
        },
        "parents": commit.parents.iter().map(|p| json!({ "sha": p })).collect::<Vec<_>>()
    })
}
