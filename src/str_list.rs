//! A list of strings kept in one buffer: each string's bytes follow the
//! one's before it, and a list of ends says where each stops. Lexical
//! analysis writes a text's terms into one (`crate::text::term_list`)
//! and ingest hands it on to the index as a memory's counted terms
//! (`crate::index::bm25::TermCounts`): one allocation per text, where a
//! `String` per term was most of analysis and of dropping a batch's
//! counted terms (`docs/speed.md`, "Building a store").

/// Strings in one buffer, in the order they were added.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StrList {
    text: String,
    /// The end of each string in `text`; each starts where the one
    /// before it ends, the first at 0.
    ends: Vec<usize>,
}

impl StrList {
    /// Makes room for `items` more strings of `bytes` more in all.
    pub fn reserve(&mut self, bytes: usize, items: usize) {
        self.text.reserve(bytes);
        self.ends.reserve(items);
    }

    /// How many strings.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether it holds no string.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// String `index`, if there is one.
    pub fn get(&self, index: usize) -> Option<&str> {
        let start = match index.checked_sub(1) {
            Some(before) => *self.ends.get(before)?,
            None => 0,
        };
        self.text.get(start..*self.ends.get(index)?)
    }

    /// The strings in order.
    pub fn iter(&self) -> impl Iterator<Item = &str> + '_ {
        let mut start = 0;
        self.ends.iter().filter_map(move |&end| {
            let string = self.text.get(start..end);
            start = end;
            string
        })
    }

    /// The strings as `String`s of their own.
    pub fn to_strings(&self) -> Vec<String> {
        self.iter().map(String::from).collect()
    }

    /// Where the next string starts: bytes written to [`StrList::buffer`]
    /// from here on are that string until [`StrList::end_string`].
    pub fn next_start(&self) -> usize {
        self.ends.last().copied().unwrap_or(0)
    }

    /// The buffer, to write the next string at its end (bytes before
    /// [`StrList::next_start`] are the list's and are left as they are).
    pub fn buffer(&mut self) -> &mut String {
        &mut self.text
    }

    /// What has been written of the next string so far.
    pub fn next_string(&self) -> &str {
        self.text.get(self.next_start()..).unwrap_or_default()
    }

    /// Makes the bytes written since the last string the next string
    /// (an empty one when none were).
    pub fn end_string(&mut self) {
        self.ends.push(self.text.len());
    }
}

impl<'a> FromIterator<&'a str> for StrList {
    fn from_iter<I: IntoIterator<Item = &'a str>>(strings: I) -> StrList {
        let mut list = StrList::default();
        for string in strings {
            list.text.push_str(string);
            list.end_string();
        }
        list
    }
}

#[cfg(test)]
mod tests {
    use super::StrList;

    #[test]
    fn strings_come_back_as_they_were_added() {
        let strings = ["b", "", "δέλτα", "a", "東京"];
        let list: StrList = strings.iter().copied().collect();
        assert_eq!(list.len(), 5);
        assert_eq!(list.iter().collect::<Vec<_>>(), strings);
        assert_eq!(list.to_strings(), strings);
        for (index, string) in strings.iter().enumerate() {
            assert_eq!(list.get(index), Some(*string));
        }
        assert_eq!(list.get(5), None);
        assert!(StrList::default().is_empty());
    }

    #[test]
    fn the_next_string_is_what_was_written_since_the_last() {
        let mut list = StrList::default();
        list.reserve(8, 2);
        list.buffer().push_str("one");
        assert_eq!(list.next_string(), "one");
        list.end_string();
        assert_eq!((list.next_start(), list.next_string()), (3, ""));
        list.buffer().push_str("two");
        let start = list.next_start();
        list.buffer().truncate(start);
        list.buffer().push('2');
        list.end_string();
        assert_eq!(list.iter().collect::<Vec<_>>(), ["one", "2"]);
        // A buffer cut below a string's end loses that string, no more.
        list.buffer().truncate(2);
        assert_eq!((list.get(0), list.get(1)), (None, None));
    }
}
