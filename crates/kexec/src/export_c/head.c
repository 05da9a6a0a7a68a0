#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <mqueue.h>
#include <linux/netlink.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/msg.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* What one op of a task does; the fields an op does not use are 0. */
enum op_kind {
    OP_UNSHARE,
    OP_SYSCTL_WRITE,
    OP_UEVENT_LISTEN,
    OP_UEVENT_RECV,     /* value: 1 to wait for a uevent */
    OP_UEVENT_CLOSE,
    OP_UEVENT_INJECT,
    OP_UEVENT_NETDEV_EVENT,
    OP_SLEEP,
    OP_WRITE_FILE,      /* one write(2) of text to path (its own /proc/self file) */
    OP_WRITE_FILE_OF,   /* one write(2) of text to /proc/PID/path of target */
    OP_OPEN_UID_MAP_OF,
    OP_WRITE_OPENED,
    OP_READ_MAP_OF,     /* reports every number of /proc/PID/path of target */
    OP_SETNS,           /* setns(2) into /proc/PID/ns/path of target */
    OP_POST,            /* write a byte to event value's pipe */
    OP_WAIT,            /* read a byte from event value's pipe */
    OP_OPEN_NS_USER,    /* open /proc/PID/ns/user of target, kept as file value */
    OP_SETNS_FD,        /* setns(2) through the kept file value */
    OP_CLOSE_FD,        /* close the kept file value */
    OP_UNSHARE_AND_EXIT,
    OP_FORK,            /* fork and clone: a child kept until exit() */
    OP_FORK_CHILD,      /* fork and clone of a child that runs the ops of instance target */
    OP_EXIT,
    OP_SETUID,
    OP_SETRESUID,       /* ids: real, effective, saved; 4294967295 leaves one as it is */
    OP_SETGID,
    OP_SETRESGID,
    OP_SETGROUPS,       /* text: the gids, separated by blanks */
    OP_GETRESUID,       /* reports the real, effective and saved uids */
    OP_GETRESGID,       /* reports the real, effective and saved gids */
    OP_NS_ID,           /* reports the inode of path, /proc/self/ns/<type> */
    OP_CAPGET,          /* reports the effective, permitted and inheritable sets */
    OP_OPEN,            /* open(2) of a set-up file (value: O_RDONLY...), closed again */
    OP_EXECVE,
    OP_SETRLIMIT,       /* flags: the resource (RLIMIT_*), value: the limit */
    OP_SIGQUEUE,        /* sigqueue(3) of SIGRTMIN to target */
    OP_SIGTIMEDWAIT,    /* take a pending SIGRTMIN without waiting */
    OP_MQ_OPEN,         /* a new queue path (no /): value messages of flags bytes, kept open */
    OP_MQ_OPEN_EXISTING, /* an existing queue path (no /), read and write, kept open */
    OP_MQ_UNLINK,
    OP_SHMGET,          /* key value, ids[0] bytes, flags: IPC_CREAT... and the mode; the id kept */
    OP_SHM_LOCK,        /* SHM_LOCK of the kept segment */
    OP_SHM_UNLOCK,      /* SHM_UNLOCK of the kept segment */
    OP_SHMAT,           /* attach the kept segment, read and write */
    OP_SHMDT,           /* detach the newest attachment */
    OP_SHMCTL,          /* flags: the command; IPC_STAT reports shm_segsz and shm_nattch */
    OP_GETPID,          /* value 0: getpid, 1: getppid; reported below the task's first pid namespace */
    OP_MSGGET,          /* key value, flags: IPC_CREAT... and the mode; the id kept */
    OP_MSGSND,          /* value bytes, type 1, IPC_NOWAIT, to the kept queue */
    OP_MSGRCV,          /* the oldest message into value bytes, IPC_NOWAIT; reports its size */
    OP_MSGCTL,          /* flags: the command; IPC_STAT reports qnum, cbytes, qbytes */
    OP_SEMGET,          /* key value, ids[0] semaphores, flags: IPC_CREAT... and the mode */
    OP_SEMOP,           /* ids[0]: the semaphore, value: the operation, IPC_NOWAIT */
    OP_SEMCTL,          /* ids[0]: the semaphore, flags: the command; GETVAL and IPC_STAT report */
    OP_SEMCTL_SETVAL    /* ids[0]: the semaphore, value: the value */
};

struct op {
    enum op_kind kind;
    unsigned long flags;      /* clone flags, or the setns nstype */
    const char *path;
    const char *text;
    long long value;          /* sysctl value, rcvbuf, sleep ns, uid, limit */
    unsigned ids[3];          /* setresuid */
    int target;               /* the instance a *_of or setns op names, -1 none */
};

struct userns_spec {
    const char *name;
    int parent;               /* index in USERNS, -1: the initial namespace */
    unsigned owner;           /* the creator's kuid and kgid */
    int has_nproc;
    unsigned long long creator_nproc;
    const char *uid_map;      /* NULL: none written */
    const char *gid_map;
};

/* A regular file made before the runs, in the working directory. */
struct file_spec {
    const char *name;
    unsigned uid, gid, mode;
};

struct sysctl_spec {
    int userns;               /* -1: the initial user namespace */
    const char *path;
    long long value;
};

struct task_spec {
    const char *name;
    int userns;               /* -1: the initial user namespace */
    unsigned uid;
    unsigned long long repeat;
    int sequential;
    int child;                /* a child that acts: started by its parent's fork */
    int keeps_caps;           /* root in its namespace, or its creator */
    int has_nproc;
    unsigned long long nproc;
    int pid_ns_depth;         /* pid namespaces below the initial one at start */
    const struct op *ops;
    int n_ops;
    const int *bounding_drop;
    int n_bounding_drop;
    const int *cap_drop;
    int n_cap_drop;
};

struct instance {
    int task;                 /* index in TASKS (its children after the tasks) */
    const char *name;
};

/* A call that shows the bug when it returns result: a run shows it when
 * each group has such a call (SYMPTOM_SHOWS says what each group is). */
struct symptom_call {
    int group;
    int instance;
    int op;
    const char *result;
};
