//! The .tc front end (being written)
