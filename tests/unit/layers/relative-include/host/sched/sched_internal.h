/* sched's own private header: including it by a relative path is fine. */
