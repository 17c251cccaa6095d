/*
 * text.h — small string helpers that both the tuner and the trainer need: edit
 * distance for "did you mean" hints, shortest round-trip formatting of numbers.
 */
#ifndef TN_TEXT_H
#define TN_TEXT_H

#include <stddef.h>

/* Edit distance between a and b: insert, delete, substitute, and swap two adjacent
 * letters, each cost 1 (optimal string alignment). */
size_t tn_edit_distance(const char *a, const char *b);

/* The candidate word most likely meant, for "did you mean" hints: one that differs
 * only in case, else the closest by tn_edit_distance within max(2, strlen(word) / 3)
 * edits; NULL when none is that near. candidates is an array of n strings. */
const char *tn_closest(const char *word, const char *const *candidates, size_t n);

/* Formats v so that it reads back as the same double: a whole number below 1e15 as
 * one ("100", "-3000", "0"), anything else with the fewest significant digits (at
 * most 17) in printf's %g style ("0.1", "1e-05", "1e+20", "nan", "inf"). Returns
 * buf. */
char *tn_format_double(double v, char *buf, size_t len);

#endif
