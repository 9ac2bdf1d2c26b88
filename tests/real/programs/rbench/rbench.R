r_sleep <- function(s) {
  Sys.sleep(s)
  s
}

sum_ints <- function(xs) {
  as.integer(sum(unlist(xs)))
}

echo_text <- function(t) {
  t
}

big_list <- function(n) {
  seq_len(n) - 1L
}

fail_with <- function(m) {
  stop(m)
}
