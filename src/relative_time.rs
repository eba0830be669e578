//! Relative dates: "yesterday", "last week", "two weekends ago", "next
//! month", "last Friday" resolved against the time a memory was made, so a
//! question naming a month (`crate::rank`, month match) finds what was said
//! about that month in other words ("we went camping last week", said on 3
//! July, is about June).
//!
//! Only expressions that place something within about a month are
//! resolved: "last year" says nothing about the month. A week is taken as
//! seven days back or forward, the month of that day is the one meant.

use time::{Date, Duration, Month, OffsetDateTime, Weekday};

use crate::text::calendar::WEEKDAYS;

/// Words of numbers a relative date may count with ("two weeks ago").
const NUMBERS: [(&str, i64); 12] = [
    ("a", 1),
    ("an", 1),
    ("one", 1),
    ("couple", 2),
    ("two", 2),
    ("three", 3),
    ("four", 4),
    ("five", 5),
    ("six", 6),
    ("seven", 7),
    ("eight", 8),
    ("nine", 9),
];

/// The months (1 to 12) of the days a text's relative dates point to,
/// read from `made_at` (ms since the Unix epoch, UTC), in the order the
/// text says them, each once. Empty when the text has none or `made_at`
/// is out of range. Ranking reads a text's words once for this and the
/// month names ([`months_resolved_in`]); the whole text is read here for
/// the tests and the LoCoMo miss analysis.
#[cfg(any(test, feature = "testing"))]
pub fn resolved_months(text: &str, made_at: i64) -> Vec<u8> {
    let lower = text.to_lowercase();
    months_resolved_in(&words(&lower), made_at)
}

/// The words dates are read from: those of a lowercase text split at every
/// character that is not ASCII alphanumeric.
pub(crate) fn words(lower: &str) -> Vec<&str> {
    lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect()
}

/// [`resolved_months`] of a text's [`words`].
pub(crate) fn months_resolved_in(words: &[&str], made_at: i64) -> Vec<u8> {
    let Ok(made) = OffsetDateTime::from_unix_timestamp(made_at.div_euclid(1000)) else {
        return Vec::new();
    };
    let today = made.date();
    let mut months = Vec::new();
    for (i, word) in words.iter().enumerate() {
        let next = words.get(i + 1).copied();
        let days = match (*word, next) {
            ("yesterday", _) => Some(Shift::Days(-1)),
            ("tomorrow", _) => Some(Shift::Days(1)),
            ("last" | "past", Some("night")) => Some(Shift::Days(-1)),
            ("last" | "past", Some("week" | "weekend")) => Some(Shift::Days(-7)),
            ("next", Some("week" | "weekend")) => Some(Shift::Days(7)),
            ("last" | "past", Some("month")) => Some(Shift::Months(-1)),
            ("next", Some("month")) => Some(Shift::Months(1)),
            ("last" | "past", Some(day)) => weekday(day).map(Shift::Back),
            ("ago", _) => ago(&words[..i]),
            _ => None,
        };
        let Some(day) = days.and_then(|shift| shift.from(today)) else {
            continue;
        };
        let month = u8::from(day.month());
        if !months.contains(&month) {
            months.push(month);
        }
    }
    months
}

/// True when a lowercase word may open a relative date
/// [`months_resolved_in`] resolves: a text holding none of these resolves to
/// no month, so a caller may skip it without collecting its words.
pub fn opens_relative_date(word: &str) -> bool {
    matches!(word, "yesterday" | "tomorrow" | "last" | "past" | "next" | "ago")
}

/// How far a relative date points from the day it was said.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Shift {
    /// A number of days, back when negative.
    Days(i64),
    /// A number of calendar months, back when negative.
    Months(i64),
    /// The last such weekday before the day.
    Back(Weekday),
}

impl Shift {
    /// The day it points to from `today`; `None` out of the calendar's range.
    fn from(self, today: Date) -> Option<Date> {
        match self {
            Shift::Days(n) => today.checked_add(Duration::days(n)),
            Shift::Months(n) => {
                let index = i64::from(today.year()) * 12 + i64::from(u8::from(today.month())) - 1 + n;
                let year = i32::try_from(index.div_euclid(12)).ok()?;
                let month = Month::try_from(u8::try_from(index.rem_euclid(12) + 1).ok()?).ok()?;
                Date::from_calendar_date(year, month, 1).ok()
            }
            Shift::Back(weekday) => {
                let mut day = today.previous_day()?;
                while day.weekday() != weekday {
                    day = day.previous_day()?;
                }
                Some(day)
            }
        }
    }
}

/// The shift of "N days/weeks/months ago", from the words before "ago".
fn ago(before: &[&str]) -> Option<Shift> {
    let (unit, rest) = before.split_last()?;
    let count = rest.iter().rev().find(|w| **w != "of").and_then(|w| {
        NUMBERS
            .iter()
            .find(|(name, _)| name == w)
            .map(|&(_, n)| n)
            .or_else(|| w.parse::<i64>().ok().filter(|n| (1..=60).contains(n)))
    })?;
    match *unit {
        "day" | "days" => Some(Shift::Days(-count)),
        "week" | "weeks" | "weekend" | "weekends" => Some(Shift::Days(-7 * count)),
        "month" | "months" => Some(Shift::Months(-count)),
        _ => None,
    }
}

/// The weekday a word names.
fn weekday(word: &str) -> Option<Weekday> {
    WEEKDAYS
        .iter()
        .find(|(name, _)| *name == word)
        .map(|&(_, day)| day)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2023-07-03, a Monday, noon UTC.
    const MONDAY_3_JULY_2023: i64 = 1_688_385_600_000;

    #[test]
    fn relative_dates_resolve_to_the_month_they_point_to() {
        let at = |text| resolved_months(text, MONDAY_3_JULY_2023);
        assert_eq!(at("We went camping last week!"), [6]);
        assert_eq!(at("I went to a support group yesterday"), [7]);
        assert_eq!(at("Last Friday we painted"), [6]);
        assert_eq!(at("last Sunday was fun"), [7]);
        assert_eq!(at("two weeks ago I ran"), [6]);
        assert_eq!(at("a couple of months ago, in fact"), [5]);
        assert_eq!(at("3 days ago"), [6]);
        assert_eq!(at("we went camping two weekends ago"), [6]);
        assert_eq!(at("Next month I'm having an art show"), [8]);
        assert_eq!(at("this past weekend was insane"), [6]);
        assert_eq!(at("tomorrow, and last month too"), [7, 6]);
        // What places nothing within a month.
        assert!(at("last year we saw the Perseids").is_empty());
        assert!(at("years ago").is_empty());
        assert!(at("the last time I saw her").is_empty());
        assert!(at("nothing dated here").is_empty());
        // A month back from January is December of the year before.
        assert_eq!(resolved_months("last month", 1_673_006_400_000), [12]);
        assert!(resolved_months("yesterday", i64::MAX).is_empty());
    }
}
