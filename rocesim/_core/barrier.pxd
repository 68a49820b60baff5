# cython: language_level=3
"""The barrier the threads of a run in parts meet at once per window (window.pyx), and
the clocks that tell the thread count's controller (thread_count.pxd) how they fare and
whether the machine has a core to spare.

A waiting thread spins, with the CPU's pause hint, for at most `spin_ns`, then sleeps
until the last thread to arrive releases the others.  Spinning answers fastest when
the others are about to arrive (an idle machine, windows of similar work); sleeping gives
the core back when they are not (a descheduled thread, another job on the machine), and a
thread that slept is favoured by the scheduler when it wakes.  The releaser wakes
sleepers only when there are any: it knows them by a counter, so a release where nobody
sleeps costs no system call.

Sleeping is a futex on Linux: the sleeper's check of the word and its sleep are one
atomic step in the kernel, so the releaser needs no lock, and waking is one system call
on the release word itself.  A pthread condition variable would make every release where
someone sleeps take a mutex (the condition's check and the wait must be atomic under it);
elsewhere (no futex) it is the fallback.

The last to arrive is told so (`barrier_arrive` returns 1) and works alone before it
releases the others (`barrier_release`): the window's serial part needs no second barrier.
"""
from libc.stdint cimport int64_t

cdef extern from *:
    """
    #include <stdint.h>
    #include <time.h>
    #include <limits.h>
    #include <stdio.h>
    #if defined(__linux__)
    #include <linux/futex.h>
    #include <sys/syscall.h>
    #include <unistd.h>
    #else
    #include <pthread.h>
    #endif
    #if defined(__x86_64__) || defined(__i386__)
    #define ROCESIM_RELAX() __builtin_ia32_pause()
    #elif defined(__aarch64__)
    #define ROCESIM_RELAX() __asm__ __volatile__("yield")
    #else
    #define ROCESIM_RELAX() ((void) 0)
    #endif

    typedef struct {
        _Alignas(64) int arrived;      /* threads arrived in this round */
        _Alignas(64) int epoch;        /* bumps at every release: what the waiters watch */
        int sleepers;                  /* threads asleep on `epoch` */
    #if !defined(__linux__)
        pthread_mutex_t mu;
        pthread_cond_t cv;
    #endif
    } rocesim_barrier;

    static inline int64_t rocesim_clock_ns(void) {      /* wall, monotonic */
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (int64_t) t.tv_sec * 1000000000LL + t.tv_nsec;
    }
    static inline int64_t rocesim_thread_cpu_ns(void) { /* the calling thread's CPU time */
        struct timespec t;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
        return (int64_t) t.tv_sec * 1000000000LL + t.tv_nsec;
    }

    /* The machine's idle CPU time since boot, ns summed over its CPUs: /proc/stat's idle
       and iowait (kept by the kernel in USER_HZ ticks: 10 ms steps); -1 where there is no
       such count (not Linux, no /proc). */
    static int64_t rocesim_machine_idle_ns(void) {
    #if defined(__linux__)
        unsigned long long user, nice, sys, idle, iowait;
        long hz = sysconf(_SC_CLK_TCK);
        int got;
        FILE* f = fopen("/proc/stat", "r");
        if (f == NULL)
            return -1;
        got = fscanf(f, "cpu %llu %llu %llu %llu %llu", &user, &nice, &sys, &idle, &iowait);
        fclose(f);
        if (got != 5 || hz <= 0)
            return -1;
        return (int64_t) (idle + iowait) * (1000000000LL / hz);
    #else
        return -1;
    #endif
    }

    static inline void rocesim_barrier_init(rocesim_barrier* b) {
        b->arrived = b->epoch = b->sleepers = 0;
    #if !defined(__linux__)
        pthread_mutex_init(&b->mu, NULL);
        pthread_cond_init(&b->cv, NULL);
    #endif
    }
    static inline void rocesim_barrier_destroy(rocesim_barrier* b) {
    #if !defined(__linux__)
        pthread_mutex_destroy(&b->mu);
        pthread_cond_destroy(&b->cv);
    #else
        (void) b;
    #endif
    }

    /* Arrive among n: 1 for the last (the others wait until it calls release), 0 for the
       others, with *round set to what they wait on. */
    static inline int rocesim_barrier_arrive(rocesim_barrier* b, int n, int* round) {
        /* (read before arriving: the round cannot end before this thread arrives) */
        *round = __atomic_load_n(&b->epoch, __ATOMIC_ACQUIRE);
        if (__atomic_add_fetch(&b->arrived, 1, __ATOMIC_ACQ_REL) == n) {
            __atomic_store_n(&b->arrived, 0, __ATOMIC_RELAXED);
            return 1;
        }
        return 0;
    }

    static inline void rocesim_barrier_release(rocesim_barrier* b) {
        __atomic_add_fetch(&b->epoch, 1, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&b->sleepers, __ATOMIC_SEQ_CST) == 0)
            return;
    #if defined(__linux__)
        syscall(SYS_futex, &b->epoch, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
    #else
        pthread_mutex_lock(&b->mu);
        pthread_cond_broadcast(&b->cv);
        pthread_mutex_unlock(&b->mu);
    #endif
    }

    /* Wait for the release of `round`: spin up to spin_ns, then sleep.  Adds the time spun
       to *spun and the time asleep to *slept (ns). */
    static inline void rocesim_barrier_wait(rocesim_barrier* b, int round, int64_t spin_ns, int64_t* spun,
                                     int64_t* slept) {
        int64_t t0, t;
        int k = 0;
        if (__atomic_load_n(&b->epoch, __ATOMIC_ACQUIRE) != round)
            return;
        t0 = rocesim_clock_ns();
        for (;;) {
            ROCESIM_RELAX();
            if (__atomic_load_n(&b->epoch, __ATOMIC_ACQUIRE) != round) {
                *spun += rocesim_clock_ns() - t0;
                return;
            }
            if (++k & 31)
                continue;
            t = rocesim_clock_ns();
            if (t - t0 >= spin_ns)
                break;
        }
        *spun += t - t0;
        /* the sleeper counts itself before it looks again, the releaser bumps the word before
           it looks at the count (both sequentially consistent): one of them sees the other */
        __atomic_add_fetch(&b->sleepers, 1, __ATOMIC_SEQ_CST);
    #if defined(__linux__)
        while (__atomic_load_n(&b->epoch, __ATOMIC_SEQ_CST) == round)
            syscall(SYS_futex, &b->epoch, FUTEX_WAIT_PRIVATE, round, NULL, NULL, 0);
    #else
        pthread_mutex_lock(&b->mu);
        while (__atomic_load_n(&b->epoch, __ATOMIC_SEQ_CST) == round)
            pthread_cond_wait(&b->cv, &b->mu);
        pthread_mutex_unlock(&b->mu);
    #endif
        __atomic_sub_fetch(&b->sleepers, 1, __ATOMIC_SEQ_CST);
        *slept += rocesim_clock_ns() - t;
    }
    """
    ctypedef struct rocesim_barrier:
        int arrived
        int epoch
        int sleepers
    int64_t rocesim_clock_ns() noexcept nogil
    int64_t rocesim_thread_cpu_ns() noexcept nogil
    int64_t rocesim_machine_idle_ns() noexcept nogil
    void rocesim_barrier_init(rocesim_barrier* b) noexcept nogil
    void rocesim_barrier_destroy(rocesim_barrier* b) noexcept nogil
    int rocesim_barrier_arrive(rocesim_barrier* b, int n, int* round) noexcept nogil
    void rocesim_barrier_release(rocesim_barrier* b) noexcept nogil
    void rocesim_barrier_wait(rocesim_barrier* b, int round, int64_t spin_ns, int64_t* spun,
                              int64_t* slept) noexcept nogil
