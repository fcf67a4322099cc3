//! The functions of `template.yaml` and what their policies allow, read from its text.

use mq_tables::schema::TEMPLATE;

/// The text of each function (`AWS::Serverless::Function`) of the template.
pub fn function_blocks() -> Vec<String> {
    let mut resources = resource_blocks();
    resources.retain(|b| b.contains("Type: AWS::Serverless::Function"));
    resources
}

/// The text of each entry of the template's sections (a resource, a parameter, ...), from its
/// name at two spaces' indent to the next.
pub fn resource_blocks() -> Vec<String> {
    let mut resources: Vec<String> = Vec::new();
    for line in TEMPLATE.lines() {
        let starts_resource = line.starts_with("  ") && !line.starts_with("   ");
        match resources.last_mut() {
            Some(last) if !starts_resource => {
                last.push_str(line);
                last.push('\n');
            }
            _ => resources.push(format!("{line}\n")),
        }
    }
    resources
}

/// What a function serves, from its description: the route after `/v1/` (`createQueue`,
/// `webhooks/github`), or `tick` for the schedule's function.
pub fn served_by(block: &str) -> Option<String> {
    let description = block
        .lines()
        .find_map(|l| l.trim().strip_prefix("Description: "))?;
    if description.starts_with("Every minute") {
        return Some("tick".to_owned());
    }
    let route = description
        .strip_prefix("POST /v1/")
        .or_else(|| description.strip_prefix("GET /v1/"))?;
    route.split_whitespace().next().map(str::to_owned)
}

/// The DynamoDB actions a function's statements allow, each on a resource named as the
/// request log names it: `Queues` for `!GetAtt QueuesTable.Arn`, `Queues/index/org-index`
/// for `!Sub "${QueuesTable.Arn}/index/org-index"` (other resources are left out).
pub fn dynamodb_allowed(block: &str) -> Vec<(String, String)> {
    let mut allowed = Vec::new();
    let mut actions: Vec<String> = Vec::new();
    let mut listing_resources = false;
    for line in block.lines().map(str::trim) {
        let resources = if let Some(listed) = line.strip_prefix("Action:") {
            actions = items(listed);
            listing_resources = false;
            continue;
        } else if let Some(listed) = line.strip_prefix("Resource:") {
            listing_resources = listed.trim().is_empty();
            items(listed)
        } else if let Some(item) = line.strip_prefix("- ").filter(|_| listing_resources) {
            vec![item.trim().to_owned()]
        } else {
            listing_resources = false;
            continue;
        };
        for resource in resources.iter().filter_map(|r| table_resource(r)) {
            for action in actions.iter().filter(|a| a.starts_with("dynamodb:")) {
                allowed.push((action.clone(), resource.clone()));
            }
        }
    }
    allowed
}

/// `a` or `[a, b]`, as items.
fn items(listed: &str) -> Vec<String> {
    listed
        .trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .split(',')
        .map(|item| item.trim().to_owned())
        .filter(|item| !item.is_empty())
        .collect()
}

/// `Queues` for `!GetAtt QueuesTable.Arn`, `Queues/index/x` for
/// `!Sub "${QueuesTable.Arn}/index/x"`; `None` for anything but a table or its index.
fn table_resource(resource: &str) -> Option<String> {
    if let Some(attribute) = resource.strip_prefix("!GetAtt ") {
        return attribute.strip_suffix("Table.Arn").map(str::to_owned);
    }
    let inner = resource.strip_prefix("!Sub \"${")?.trim_end_matches('"');
    let (attribute, rest) = inner.split_once('}')?;
    let table = attribute.strip_suffix("Table.Arn")?;
    Some(format!("{table}{rest}"))
}
