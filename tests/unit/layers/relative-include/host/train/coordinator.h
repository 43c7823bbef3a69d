/* A header of train, as seen from sched/sched.c above. */
