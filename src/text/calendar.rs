//! The calendar's words as texts say them, lowercase: one table of month
//! names and one of weekday names, read by ranking (`crate::rank`: named
//! months, time words), relative dates (`crate::relative_time`) and the
//! tests' readers of dated corpora.

use time::Weekday;

/// Month names, January first.
pub const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// Weekday names, Monday first.
pub const WEEKDAYS: [(&str, Weekday); 7] = [
    ("monday", Weekday::Monday),
    ("tuesday", Weekday::Tuesday),
    ("wednesday", Weekday::Wednesday),
    ("thursday", Weekday::Thursday),
    ("friday", Weekday::Friday),
    ("saturday", Weekday::Saturday),
    ("sunday", Weekday::Sunday),
];

/// The month (1 to 12) `word` names, in any case.
pub fn month_number(word: &str) -> Option<u8> {
    let i = MONTHS.iter().position(|m| m.eq_ignore_ascii_case(word))?;
    u8::try_from(i + 1).ok()
}

/// Whether `word` (lowercase) names a month or a weekday.
pub fn is_calendar_name(word: &str) -> bool {
    MONTHS.contains(&word) || WEEKDAYS.iter().any(|(name, _)| *name == word)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tables_follow_the_calendar() {
        assert_eq!(month_number("January"), Some(1));
        assert_eq!(month_number("may"), Some(5));
        assert_eq!(month_number("DECEMBER"), Some(12));
        assert_eq!(month_number("smarch"), None);
        let mut day = Weekday::Monday;
        for (name, weekday) in WEEKDAYS {
            assert_eq!(weekday, day, "{name}");
            assert!(is_calendar_name(name));
            day = day.next();
        }
        assert!(is_calendar_name("october") && !is_calendar_name("weekend"));
    }
}
