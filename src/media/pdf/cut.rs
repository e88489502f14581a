//! A new PDF holding some pages of another, for Read's `pages`.
//!
//! The new file is written whole rather than appended to the old one as
//! an incremental update: an update would carry every other page's bytes
//! along, and a document stays in the conversation, sent again with
//! every request. So the pages asked for are copied with what they reach
//! (contents, fonts, images, annotations), numbered afresh from 1, under
//! a new catalog and a one-level page tree, with a classic xref table.
//!
//! What a page inherits from the nodes above it (/Resources, /MediaBox,
//! /CropBox, /Rotate) is written onto the page itself, so it renders as
//! before. References to the other pages and to the old tree's nodes (a
//! widget's /P, a /Parent) become `null`, and links to those pages lose
//! their destination, so nothing pulls the rest of the document in. The page tree is walked with a stack and a
//! set of objects seen: a loop or a node met twice is an error, and
//! /Count is never trusted (the pages found are what a reader finds).

use std::collections::{HashMap, HashSet, VecDeque};

use super::objects::{Dict, Doc, Value, get};

/// What a page takes from its ancestors when it does not say itself.
const INHERITED: [&[u8]; 4] = [b"Resources", b"MediaBox", b"CropBox", b"Rotate"];

#[derive(Debug, PartialEq)]
pub enum CutError {
    /// The document has only this many pages.
    Range(usize),
    /// The pages asked for need more than the limit given.
    TooLarge,
    /// Why the document cannot be cut, as a clause ("it is damaged: …").
    Bad(String),
}

/// The pages asked for, as a document of their own.
#[derive(Debug)]
pub struct Cut {
    /// The new file; None when the pages asked for are all there are.
    pub bytes: Option<Vec<u8>>,
    /// The pages the document has, as its page tree lists them.
    pub total: usize,
}

/// Pages `first` to `last` (from 1) of `bytes`, in a new file of at most
/// `max` bytes whose header says `version`.
pub fn cut(
    bytes: &[u8],
    version: &str,
    first: usize,
    last: usize,
    max: usize,
) -> Result<Cut, CutError> {
    let doc = Doc::scan(bytes);
    let root = doc
        .root
        .or(doc.catalog)
        .ok_or_else(|| damaged("no trailer names its catalog"))?;
    let tree = walk(&doc, root).map_err(|e| damaged(&e))?;
    let total = tree.leaves.len();
    if total == 0 {
        return Err(CutError::Bad("it has no pages".into()));
    }
    if last > total || first == 0 || first > last {
        return Err(CutError::Range(total));
    }
    if first == 1 && last == total {
        return Ok(Cut { bytes: None, total });
    }
    let chosen = &tree.leaves[first - 1..last];
    let mut w = Writer {
        doc: &doc,
        numbers: Numbers {
            map: HashMap::new(),
            queue: VecDeque::new(),
            skip: tree.nodes,
        },
        out: Vec::new(),
        offsets: vec![0; 3],
        max,
    };
    for (i, leaf) in chosen.iter().enumerate() {
        w.numbers.skip.remove(&leaf.num);
        w.numbers.map.insert(leaf.num, 3 + i as u32);
    }
    let version = if version.is_empty() { "1.7" } else { version };
    w.out
        .extend_from_slice(format!("%PDF-{version}\n").as_bytes());
    // A comment of high bytes: the file is binary, for anything that asks.
    w.out.extend_from_slice(b"%\xe2\xe3\xcf\xd3\n");
    // The catalog keeps the optional-content settings, so layers hidden
    // by default stay hidden.
    let mut catalog = b"<< /Type /Catalog /Pages 2 0 R".to_vec();
    if let Ok((Value::Dict(old), _)) = doc.object(root)
        && let Some(oc) = get(&old, b"OCProperties")
    {
        catalog.extend_from_slice(b" /OCProperties ");
        w.numbers.write(&doc, oc, &mut catalog);
    }
    catalog.extend_from_slice(b" >>");
    w.object(1, &catalog)?;
    let kids: Vec<String> = (0..chosen.len())
        .map(|i| format!("{} 0 R", 3 + i))
        .collect();
    let node = format!(
        "<< /Type /Pages /Kids [{}] /Count {} >>",
        kids.join(" "),
        chosen.len()
    );
    w.object(2, node.as_bytes())?;
    for (i, leaf) in chosen.iter().enumerate() {
        let page = w.page(leaf).map_err(|e| damaged(&e))?;
        w.object(3 + i as u32, &page)?;
    }
    while let Some(old) = w.numbers.queue.pop_front() {
        w.copy(old)?;
    }
    Ok(Cut {
        bytes: Some(w.finish()),
        total,
    })
}

fn damaged(why: &str) -> CutError {
    CutError::Bad(format!("it is damaged: {why}"))
}

/// A page, and the node each inherited attribute would come from.
struct Leaf {
    num: u32,
    from: [Option<u32>; 4],
}

struct Tree {
    leaves: Vec<Leaf>,
    /// Every object of the tree, the catalog too: never copied unless
    /// chosen.
    nodes: HashSet<u32>,
}

fn walk(doc: &Doc<'_>, root: u32) -> Result<Tree, String> {
    let (catalog, _) = doc.object(root)?;
    let Value::Dict(catalog) = catalog else {
        return Err(format!("its catalog (object {root}) is not a dictionary"));
    };
    let Some(Value::Ref(top)) = get(&catalog, b"Pages") else {
        return Err("its catalog names no page tree".into());
    };
    let mut nodes = HashSet::from([root]);
    let mut leaves = Vec::new();
    let mut stack = vec![(*top, [None; 4])];
    while let Some((num, from)) = stack.pop() {
        if !nodes.insert(num) {
            return Err(format!(
                "its page tree reaches object {num} twice (a loop or a shared node)"
            ));
        }
        let (node, _) = doc.object(num)?;
        let Value::Dict(node) = node else {
            return Err(format!("page tree object {num} is not a dictionary"));
        };
        let kids = get(&node, b"Kids");
        match (get(&node, b"Type"), kids) {
            (Some(Value::Name(b"Pages")), _) | (None, Some(_)) => {
                let Some(Value::Array(kids)) = kids else {
                    return Err(format!("page tree node {num} has no /Kids array"));
                };
                let mut from = from;
                for (slot, key) in from.iter_mut().zip(INHERITED) {
                    if get(&node, key).is_some() {
                        *slot = Some(num);
                    }
                }
                for kid in kids.iter().rev() {
                    let Value::Ref(kid) = kid else {
                        return Err(format!(
                            "page tree node {num} lists a kid that is not a reference"
                        ));
                    };
                    stack.push((*kid, from));
                }
            }
            (Some(Value::Name(b"Page")) | None, _) => leaves.push(Leaf { num, from }),
            _ => {
                return Err(format!(
                    "page tree object {num} is neither a page nor a node of pages"
                ));
            }
        }
    }
    Ok(Tree { leaves, nodes })
}

/// New numbers for old objects, given as they are first referred to.
struct Numbers {
    map: HashMap<u32, u32>,
    /// Numbered and not yet written.
    queue: VecDeque<u32>,
    /// Objects never copied (the old tree, the pages not chosen).
    skip: HashSet<u32>,
}

impl Numbers {
    /// The new number of `old`, or None when it is not copied.
    fn number(&mut self, doc: &Doc<'_>, old: u32) -> Option<u32> {
        if let Some(n) = self.map.get(&old) {
            return Some(*n);
        }
        if self.skip.contains(&old) || !doc.has(old) {
            return None;
        }
        // 1 and 2 are the catalog and the page tree.
        let n = u32::try_from(self.map.len() + 3).ok()?;
        self.map.insert(old, n);
        self.queue.push_back(old);
        Some(n)
    }

    /// Writes `v` with its references renumbered (`null` for those not
    /// copied). Recursion is bounded: values nest at most MAX_DEPTH deep.
    fn write(&mut self, doc: &Doc<'_>, v: &Value<'_>, out: &mut Vec<u8>) {
        match v {
            Value::Null => out.extend_from_slice(b"null"),
            Value::Word(w) | Value::Str(w) => out.extend_from_slice(w),
            Value::Name(n) => {
                out.push(b'/');
                out.extend_from_slice(n);
            }
            Value::Ref(old) => match self.number(doc, *old) {
                Some(n) => out.extend_from_slice(format!("{n} 0 R").as_bytes()),
                None => out.extend_from_slice(b"null"),
            },
            Value::Array(items) => {
                out.push(b'[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(b' ');
                    }
                    self.write(doc, item, out);
                }
                out.push(b']');
            }
            Value::Dict(entries) => {
                out.extend_from_slice(b"<<");
                self.entries(doc, entries, &[], out);
                out.extend_from_slice(b" >>");
            }
        }
    }

    /// ` /Key value` for each entry but those named in `leave`. A link's
    /// destination on a page not sent is left out too: a destination of
    /// `null` is an error to readers, a link going nowhere is not.
    fn entries(&mut self, doc: &Doc<'_>, d: &Dict<'_>, leave: &[&[u8]], out: &mut Vec<u8>) {
        for (key, value) in d {
            if leave.contains(key) {
                continue;
            }
            if matches!(*key, b"Dest" | b"D")
                && let Value::Array(dest) = value
                && let Some(Value::Ref(page)) = dest.first()
                && self.skip.contains(page)
            {
                continue;
            }
            out.extend_from_slice(b" /");
            out.extend_from_slice(key);
            out.push(b' ');
            self.write(doc, value, out);
        }
    }
}

struct Writer<'d, 'a> {
    doc: &'d Doc<'a>,
    numbers: Numbers,
    out: Vec<u8>,
    /// Where each new object starts, by number (0 is the free head).
    offsets: Vec<usize>,
    max: usize,
}

impl Writer<'_, '_> {
    fn object(&mut self, num: u32, body: &[u8]) -> Result<(), CutError> {
        self.start(num);
        self.out.extend_from_slice(body);
        self.out.extend_from_slice(b"\nendobj\n");
        self.fits()
    }

    fn start(&mut self, num: u32) {
        let i = num as usize;
        if self.offsets.len() <= i {
            self.offsets.resize(i + 1, 0);
        }
        self.offsets[i] = self.out.len();
        self.out
            .extend_from_slice(format!("{num} 0 obj\n").as_bytes());
    }

    fn fits(&self) -> Result<(), CutError> {
        if self.out.len() > self.max {
            return Err(CutError::TooLarge);
        }
        Ok(())
    }

    /// A chosen page, under the new tree, with what it inherited.
    fn page(&mut self, leaf: &Leaf) -> Result<Vec<u8>, String> {
        let doc = self.doc;
        let (page, _) = doc.object(leaf.num)?;
        let Value::Dict(page) = page else {
            return Err(format!("page object {} is not a dictionary", leaf.num));
        };
        let mut out = b"<< /Type /Page /Parent 2 0 R".to_vec();
        self.numbers
            .entries(doc, &page, &[b"Type", b"Parent"], &mut out);
        for (key, from) in INHERITED.iter().zip(leaf.from) {
            if get(&page, key).is_some() {
                continue;
            }
            let Some(node) = from else { continue };
            if let Ok((Value::Dict(node), _)) = doc.object(node)
                && let Some(value) = get(&node, key)
            {
                out.extend_from_slice(b" /");
                out.extend_from_slice(key);
                out.push(b' ');
                self.numbers.write(doc, value, &mut out);
            }
        }
        out.extend_from_slice(b" >>");
        Ok(out)
    }

    /// Copies object `old` under its new number. One that cannot be read
    /// becomes `null`, as a reader takes a reference to nothing: a broken
    /// font should not cost the page.
    fn copy(&mut self, old: u32) -> Result<(), CutError> {
        let Some(&num) = self.numbers.map.get(&old) else {
            return Ok(());
        };
        let doc = self.doc;
        let mut body = Vec::new();
        match doc.object(old) {
            Ok((Value::Dict(d), Some(stream))) => {
                let data = &doc.bytes()[stream.start..stream.end];
                body.extend_from_slice(b"<<");
                self.numbers.entries(doc, &d, &[b"Length"], &mut body);
                body.extend_from_slice(format!(" /Length {} >>\nstream\n", data.len()).as_bytes());
                body.extend_from_slice(data);
                body.extend_from_slice(b"\nendstream");
            }
            Ok((value, _)) => self.numbers.write(doc, &value, &mut body),
            Err(_) => body.extend_from_slice(b"null"),
        }
        self.object(num, &body)
    }

    fn finish(mut self) -> Vec<u8> {
        let at = self.out.len();
        let size = self.offsets.len();
        self.out
            .extend_from_slice(format!("xref\n0 {size}\n0000000000 65535 f \n").as_bytes());
        for offset in &self.offsets[1..] {
            self.out
                .extend_from_slice(format!("{offset:010} 00000 n \n").as_bytes());
        }
        self.out.extend_from_slice(
            format!("trailer\n<< /Size {size} /Root 1 0 R >>\nstartxref\n{at}\n%%EOF\n").as_bytes(),
        );
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::media::pdf::check;
    use crate::media::samples;

    const MAX: usize = 20 << 20;

    fn part(doc: &[u8], first: usize, last: usize) -> Vec<u8> {
        cut(doc, "1.7", first, last, MAX).unwrap().bytes.unwrap()
    }

    /// The text each page of `pdf` draws, in order, read back through the
    /// page tree of the new file.
    fn texts(pdf: &[u8]) -> Vec<String> {
        let doc = Doc::scan(pdf);
        let tree = walk(&doc, doc.root.unwrap()).unwrap();
        tree.leaves
            .iter()
            .map(|leaf| {
                let Ok((Value::Dict(page), _)) = doc.object(leaf.num) else {
                    panic!("page {} is not a dictionary", leaf.num)
                };
                let Some(Value::Ref(c)) = get(&page, b"Contents") else {
                    panic!("no contents")
                };
                let (_, stream) = doc.object(*c).unwrap();
                let s = stream.unwrap();
                String::from_utf8_lossy(&pdf[s.start..s.end]).into_owned()
            })
            .collect()
    }

    #[test]
    fn the_pages_asked_for_and_only_they_are_copied() {
        for packed in [false, true] {
            if packed && !cfg!(feature = "pdf") {
                continue;
            }
            let doc = samples::pdf(5, packed);
            let two = part(&doc, 2, 2);
            assert_eq!(check(&two).unwrap().pages, 1);
            let t = texts(&two);
            assert_eq!(t.len(), 1);
            assert!(t[0].contains("(Page 2 of tern)"), "{t:?}");
            let range = part(&doc, 2, 3);
            assert_eq!(check(&range).unwrap().pages, 2);
            let t = texts(&range);
            assert!(
                t[0].contains("Page 2 ") && t[1].contains("Page 3 "),
                "{t:?}"
            );
            for other in ["Page 1 ", "Page 4 ", "Page 5 "] {
                assert!(memchr::memmem::find(&range, other.as_bytes()).is_none());
            }
            // The font all pages share is copied once.
            let fonts = memchr::memmem::find_iter(&range, b"/Helvetica").count();
            assert_eq!(fonts, 1);
            let whole = cut(&doc, "1.7", 1, 5, MAX).unwrap();
            assert_eq!((whole.bytes, whole.total), (None, 5));
        }
    }

    #[test]
    fn inherited_attributes_move_onto_the_page_and_links_out_go_nowhere() {
        let doc = samples::pdf_nested(6);
        let out = part(&doc, 2, 4);
        let text = String::from_utf8_lossy(&out);
        assert_eq!(check(&out).unwrap().pages, 3);
        // One page tree node: the old ones are gone.
        assert_eq!(text.matches("/Type /Pages").count(), 1, "{text}");
        assert_eq!(text.matches("/MediaBox [0 0 300 200]").count(), 3, "{text}");
        assert_eq!(text.matches("/Font <<").count(), 3, "{text}");
        // Pages 4 (of 6) is in the second half, rotated; 2 and 3 are not.
        assert_eq!(text.matches("/Rotate 90").count(), 1, "{text}");
        // Page 2's link to page 1, which is not sent, goes nowhere.
        assert!(
            text.contains("/Subtype /Link /Rect [0 0 50 50] >>"),
            "{text}"
        );
        assert!(!text.contains("/Dest"), "{text}");
        let t = texts(&out);
        assert!(t[2].contains("Page 4 of tern"), "{t:?}");
    }

    /// A page tree whose root is object 2, with the objects given.
    fn tree(objects: &[(usize, &str)]) -> Vec<u8> {
        let mut all = vec![(1, "<< /Type /Catalog /Pages 2 0 R >>".to_string())];
        all.extend(objects.iter().map(|(n, b)| (*n, b.to_string())));
        samples::pdf_of(&all)
    }

    fn refused(doc: &[u8]) -> String {
        match cut(doc, "1.7", 1, 1, MAX) {
            Err(CutError::Bad(why)) => why,
            other => panic!("not refused: {other:?}"),
        }
    }

    #[test]
    fn loops_and_lies_in_the_page_tree_are_refused_or_ignored() {
        // A node that is its own kid, and two nodes that are each other's.
        let own = tree(&[(2, "<< /Type /Pages /Kids [2 0 R] /Count 1 >>")]);
        assert!(refused(&own).contains("twice"), "{}", refused(&own));
        let pair = tree(&[
            (2, "<< /Type /Pages /Kids [3 0 R] /Count 1 >>"),
            (3, "<< /Type /Pages /Kids [2 0 R] /Count 1 >>"),
        ]);
        assert!(refused(&pair).contains("loop"));
        // The same page listed twice.
        let twice = tree(&[
            (2, "<< /Type /Pages /Kids [3 0 R 3 0 R] /Count 2 >>"),
            (3, "<< /Type /Page /Parent 2 0 R >>"),
        ]);
        assert!(refused(&twice).contains("object 3 twice"));
        // /Count says a billion; the tree has two pages, and that is all
        // a reader finds.
        let liar = tree(&[
            (
                2,
                "<< /Type /Pages /Kids [3 0 R 4 0 R] /Count 1000000000 >>",
            ),
            (3, "<< /Type /Page /Parent 2 0 R >>"),
            (4, "<< /Type /Page /Parent 2 0 R >>"),
        ]);
        assert_eq!(
            cut(&liar, "1.7", 3, 3, MAX).unwrap_err(),
            CutError::Range(2)
        );
        assert_eq!(check(&part(&liar, 2, 2)).unwrap().pages, 1);
        // Kids that are missing, not references, or not pages.
        let missing = tree(&[(2, "<< /Type /Pages /Kids [9 0 R] /Count 1 >>")]);
        assert!(refused(&missing).contains("object 9 is not in the file"));
        let direct = tree(&[(2, "<< /Type /Pages /Kids [<< /Type /Page >>] /Count 1 >>")]);
        assert!(refused(&direct).contains("not a reference"));
        let odd = tree(&[
            (2, "<< /Type /Pages /Kids [3 0 R] /Count 1 >>"),
            (3, "<< /Type /Font >>"),
        ]);
        assert!(refused(&odd).contains("neither a page"));
        let none = tree(&[(2, "<< /Type /Pages /Kids [] /Count 0 >>")]);
        assert!(refused(&none).contains("no pages"));
    }

    #[test]
    fn damaged_files_give_reasons_not_panics() {
        let doc = samples::pdf(3, false);
        // Cut anywhere: never a panic, and either pages or a reason.
        for end in (0..doc.len()).step_by(7) {
            let _ = cut(&doc[..end], "1.7", 2, 2, MAX);
        }
        // Deep nesting in a page.
        let deep = format!(
            "<< /Type /Page /Parent 2 0 R /X {}{} >>",
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        let nested = tree(&[
            (2, "<< /Type /Pages /Kids [3 0 R 4 0 R] /Count 2 >>"),
            (3, "<< /Type /Page /Parent 2 0 R >>"),
            (4, deep.as_str()),
        ]);
        match cut(&nested, "1.7", 2, 2, MAX) {
            Err(CutError::Bad(why)) => assert!(why.contains("too deep"), "{why}"),
            other => panic!("{other:?}"),
        }
        // No trailer and no catalog.
        assert!(refused(b"%PDF-1.4\n1 0 obj << >> endobj\n%%EOF\n").contains("catalog"));
        // Without its trailer, the catalog is found by its type.
        let text = String::from_utf8_lossy(&doc).replace("/Root 1 0 R", "");
        assert_eq!(check(&part(text.as_bytes(), 2, 2)).unwrap().pages, 1);
        // Invalid UTF-8 in names and strings is copied as it is.
        let odd = tree(&[
            (2, "<< /Type /Pages /Kids [3 0 R 4 0 R] /Count 2 >>"),
            (3, "<< /Type /Page /Parent 2 0 R >>"),
            (
                4,
                "<< /Type /Page /Parent 2 0 R /X (\u{ff}\u{fe}) /N\u{e9} 1 >>",
            ),
        ]);
        let mut bytes = odd.clone();
        for b in bytes.iter_mut() {
            if *b == 0xc3 {
                *b = 0xff;
            }
        }
        let out = part(&bytes, 2, 2);
        assert!(memchr::memmem::find(&out, b"/N\xff").is_some());
    }

    #[test]
    fn a_stream_length_that_names_its_own_object_does_not_loop() {
        let objects = [
            (2, "<< /Type /Pages /Kids [3 0 R 4 0 R] /Count 2 >>"),
            (3, "<< /Type /Page /Parent 2 0 R >>"),
            (4, "<< /Type /Page /Parent 2 0 R /Contents 5 0 R >>"),
            (5, "<< /Length 5 0 R >>\nstream\nBT ET\nendstream"),
        ];
        let out = part(&tree(&objects), 2, 2);
        let text = String::from_utf8_lossy(&out);
        assert!(
            text.contains("/Length 5 >>\nstream\nBT ET\nendstream"),
            "{text}"
        );
    }

    #[test]
    fn streams_without_an_end_are_searched_for_once() {
        // Two hundred thousand streams with no `endstream` anywhere: each
        // searched to the end would take minutes.
        let mut doc = b"%PDF-1.4\n".to_vec();
        for n in 0..200_000 {
            doc.extend_from_slice(format!("{n} 0 obj << >> stream\nxx ").as_bytes());
        }
        doc.extend_from_slice(b"\n%%EOF\n");
        let started = std::time::Instant::now();
        assert!(refused(&doc).contains("catalog"));
        assert!(started.elapsed() < std::time::Duration::from_secs(10));
    }

    #[test]
    fn pages_too_large_to_send_are_refused() {
        let doc = samples::pdf(3, false);
        assert_eq!(cut(&doc, "1.7", 2, 2, 100).unwrap_err(), CutError::TooLarge);
    }
}
