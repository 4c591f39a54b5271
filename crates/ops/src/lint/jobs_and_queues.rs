//! `lint`'s checks of jobs and queue trees across documents: jobs that name a queue read as
//! `place` reads them, and every problem `queues validate` reports for the queues among the
//! files (kubectl Lists of them too), each at the document and field it is about.

use serde_json::Value;

use formats::queues::list_items;
use formats::{jobs, queues};

use super::{check_workload, Document, Problem, Severity};

/// Whether a document is a queue (a KAI `scheduling.run.ai` Queue; a Kueue ClusterQueue,
/// Cohort or LocalQueue) `queues validate` reads.
fn is_queue(doc: &Value) -> bool {
    let api = doc.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    match doc.get("kind").and_then(Value::as_str) {
        Some("Queue") => api.starts_with("scheduling.run.ai/"),
        Some("ClusterQueue" | "Cohort" | "LocalQueue") => api.starts_with("kueue.x-k8s.io/"),
        _ => false,
    }
}

/// Whether a document is a queue `queues validate` reads, or a kubectl List holding one.
fn holds_queue(doc: &Value) -> bool {
    is_queue(doc) || list_items(vec![doc.clone()]).iter().any(is_queue)
}

/// Where an object read from the linted files came from: its document in `docs` and, for an
/// item of a kubectl List (`kind: List`, `items:`), its index there.
type Place = (usize, Option<usize>);

/// The linted documents grouped by file in input order, each file's kubectl Lists standing for
/// their items ([`list_items`], the one List reader): (file, objects, where each came from).
fn objects_by_file(docs: &[Document]) -> Vec<(&str, Vec<Value>, Vec<Place>)> {
    let mut files: Vec<(&str, Vec<Value>, Vec<Place>)> = Vec::new();
    for (i, d) in docs.iter().enumerate() {
        let at = match files.iter().position(|f| f.0 == d.file) {
            Some(at) => at,
            None => {
                files.push((d.file.as_str(), Vec::new(), Vec::new()));
                files.len() - 1
            }
        };
        let items = list_items(vec![d.value.clone()]);
        let is_list = items.len() != 1 || items[0] != d.value;
        for (k, item) in items.into_iter().enumerate() {
            files[at].1.push(item);
            files[at].2.push((i, is_list.then_some(k)));
        }
    }
    files
}

/// A path inside an object, prefixed with `items[K].` when the object is a List's item.
fn path_at(place: Place, path: &str) -> String {
    match place.1 {
        Some(k) => format!("items[{k}].{path}"),
        None => path.to_owned(),
    }
}

/// A reader's message about a document (`FILE: document N (Kind name): PATH: what`) as a
/// finding's path and message; `-` when it names no path.
fn located(file: &str, text: &str) -> (String, String) {
    let rest = text.strip_prefix(&format!("{file}: ")).unwrap_or(text);
    let rest = match rest
        .strip_prefix("document ")
        .and_then(|r| r.split_once(": "))
    {
        Some((head, tail))
            if head
                .split(' ')
                .next()
                .is_some_and(|n| n.parse::<usize>().is_ok()) =>
        {
            tail
        }
        _ => rest,
    };
    match rest.split_once(": ") {
        Some((path, message)) if !path.is_empty() && !path.contains(' ') => {
            (path.to_owned(), message.to_owned())
        }
        _ => ("-".to_owned(), rest.to_owned()),
    }
}

/// Jobs that name a queue, read as `place` reads them ([`jobs::jobs_in_documents`]) with the
/// requests check `place` applies before it looks at a cluster ([`jobs::JobDoc::check_requests`]):
/// what `place` would refuse is a finding (a warning when only railyard refuses it: a job asking
/// for no GPU). A document whose workload checks ([`check_workload`]) already found an error is
/// not reported again.
pub(super) fn check_jobs(docs: &[Document]) -> Vec<(usize, Vec<Problem>)> {
    let mut out = Vec::new();
    let mut files: Vec<(&str, Vec<Value>, Vec<usize>)> = Vec::new();
    for (i, d) in docs.iter().enumerate() {
        match files.iter_mut().find(|f| f.0 == d.file) {
            Some(f) => {
                f.1.push(d.value.clone());
                f.2.push(i);
            }
            None => files.push((d.file.as_str(), vec![d.value.clone()], vec![i])),
        }
    }
    for (file, values, places) in &files {
        if !values.iter().any(jobs::names_queue) {
            continue;
        }
        let Ok(found) = jobs::jobs_in_documents(file, values, None) else {
            continue;
        };
        for (document, job) in found {
            let Some(&i) = places.get(document.wrapping_sub(1)) else {
                continue;
            };
            if !jobs::names_queue(&docs[i].value)
                || check_workload(&docs[i].value)
                    .iter()
                    .any(|p| p.severity == Severity::Error)
            {
                continue;
            }
            // A job Kueue or KAI would refuse is an error; one they take and `place` does not
            // (it asks for no GPU) is a warning: the manifest is fine, railyard's answer is no.
            let refusal = match job {
                Ok(j) => j.check_requests().err().map(|m| {
                    let (path, m) = located(file, &m);
                    (
                        Severity::Warning,
                        path,
                        format!("railyard place refuses it: {m}"),
                    )
                }),
                Err(e) => {
                    let (path, m) = located(file, &e.to_string());
                    Some((Severity::Error, path, m))
                }
            };
            if let Some((severity, path, message)) = refusal {
                out.push((i, vec![Problem::new(severity, path, message)]));
            }
        }
    }
    out
}

/// With queues among the linted files (kubectl Lists of them too): every problem `queues
/// validate` reports for them ([`crate::queues::findings`], the same function), with the jobs
/// in the files that name a queue. Each finding goes to the document and field it is about. A
/// job that cannot be read is [`check_jobs`]'s to report, once.
pub(super) fn check_queues(docs: &[Document]) -> Vec<(usize, Vec<Problem>)> {
    let mut out = Vec::new();
    if !docs.iter().any(|d| holds_queue(&d.value)) {
        return out;
    }
    // The files with queues or jobs, each with its objects and where they came from.
    let mut files = objects_by_file(docs);
    files.retain(|(_, values, _)| values.iter().any(|v| is_queue(v) || jobs::is_job_doc(v)));
    let sources: Vec<queues::Source<'_>> = files
        .iter()
        .map(|(file, values, _)| queues::Source {
            file,
            text: None,
            docs: values,
        })
        .collect();
    let read = queues::read_documents(&sources, queues::JobSelection::NamingAQueue);
    let place_of = |file: &str, document: Option<usize>| -> Option<Place> {
        let places = files
            .iter()
            .find(|(f, _, _)| *f == file)
            .map(|(_, _, places)| places.as_slice())
            .unwrap_or_default();
        document
            .and_then(|n| places.get(n.wrapping_sub(1)))
            .or(places.first())
            .copied()
    };
    for (file, document, path, message) in kueue_never_admitted(docs, &read) {
        if let Some(place) = place_of(&file, Some(document)) {
            out.push((
                place.0,
                vec![Problem::new(
                    Severity::Warning,
                    path_at(place, &path),
                    message,
                )],
            ));
        }
    }
    // A finding without a known document (none expected for parsed files) goes to the file's
    // first document, or the first queue's, so that none is lost.
    let first_queue = docs.iter().position(|d| holds_queue(&d.value)).unwrap_or(0);
    for f in crate::queues::findings(&read) {
        let place = place_of(&f.file, f.document).unwrap_or((first_queue, None));
        let job_read_error = f.path.is_none()
            && f.document.is_some()
            && place.1.is_none()
            && jobs::names_queue(&docs[place.0].value);
        if job_read_error {
            continue; // check_jobs reports it, with its path
        }
        let path = f
            .path
            .map_or_else(|| "-".to_owned(), |p| path_at(place, &p));
        out.push((
            place.0,
            vec![Problem::new(Severity::Error, path, f.message)],
        ));
    }
    out
}

/// Jobs of Kueue ClusterQueues that ask for more GPUs than their ClusterQueue can ever have in
/// any flavor (Kueue's `PotentialAvailable`, through its Cohorts): Kueue accepts them and keeps
/// them pending for ever. (file, document, path, message) of the job.
fn kueue_never_admitted(
    docs: &[Document],
    read: &queues::QueueFiles,
) -> Vec<(String, usize, String, String)> {
    let mut objects = formats::kueue_objects::KueueObjects::default();
    let values = list_items(docs.iter().map(|d| d.value.clone()).collect());
    objects.read("-", &values);
    let Ok(q) = crate::kueue_admit::queues(&objects, &[]) else {
        return Vec::new();
    };
    let gpu = crate::kueue_admit::GPU;
    let mut out = Vec::new();
    for j in &read.jobs {
        let Some(cq) = q.find(&j.queue).filter(|_| j.request.gpu > 0.0) else {
            continue;
        };
        let groups = &q.spec(cq).groups;
        let most = groups
            .iter()
            .filter(|g| g.covered.iter().any(|r| r == gpu))
            .flat_map(|g| &g.flavors)
            .filter_map(|(f, _)| q.tree.fr(f, gpu))
            .map(|fr| q.tree.potential_available(cq, fr))
            .max();
        let message = match most {
            None => format!(
                "Kueue keeps job `{}` pending: resource {gpu} unavailable in ClusterQueue {}",
                j.job, j.queue
            ),
            Some(m) if (m as f64) < j.request.gpu => format!(
                "Kueue keeps job `{}` pending: it asks for {} {gpu}, above the most ClusterQueue {} can ever have in any flavor ({m})",
                j.job, j.request.gpu, j.queue
            ),
            Some(_) => continue,
        };
        out.push((j.file.clone(), j.document, j.queue_field.clone(), message));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::located;

    #[test]
    fn reader_messages_split_into_path_and_message() {
        let f = "jobs.yaml";
        assert_eq!(
            located(
                f,
                "jobs.yaml: document 2 (Job a): spec.template.spec.containers: no GPU"
            ),
            (
                "spec.template.spec.containers".to_owned(),
                "no GPU".to_owned()
            )
        );
        assert_eq!(
            located(f, "jobs.yaml: document 1: metadata.name: missing"),
            ("metadata.name".to_owned(), "missing".to_owned())
        );
        // No path: the whole message, at `-`.
        assert_eq!(
            located(f, "jobs.yaml: no job found; expected a job"),
            ("-".to_owned(), "no job found; expected a job".to_owned())
        );
    }
}
