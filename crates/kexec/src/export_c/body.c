/* ---- system calls: each returns 0 or the kernel's errno ---- */

static int results_fd = -1;   /* where every process of a run reports */

static int err_of(long r) { return r < 0 ? errno : 0; }

static void close_fd(int fd)
{
    if (fd >= 0)
        close(fd);
}

static int write_all(int fd, const char *buf, size_t len)
{
    ssize_t n = write(fd, buf, len);
    return n < 0 ? errno : 0;
}

static size_t read_full(int fd, char *buf, size_t len)
{
    size_t got = 0;
    while (got < len) {
        ssize_t n = read(fd, buf + got, len - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    return got;
}

/* A pipe whose ends are closed on execve. */
static void make_pipe(int fds[2])
{
    if (pipe2(fds, O_CLOEXEC) != 0) {
        perror("pipe2");
        _exit(1);
    }
}

static void keep_on_exec(int fd) { (void)fcntl(fd, F_SETFD, 0); }

/* clone(flags | SIGCHLD) without a new stack: a fork that may also make
 * new namespaces. 0 in the child; the child's pid, or minus the errno. */
static long clone_process(unsigned long flags)
{
    long pid = syscall(SYS_clone, flags | SIGCHLD, NULL, NULL, NULL, 0UL);
    return pid < 0 ? -errno : pid;
}

static int wait_for(pid_t pid, int *status)
{
    int st = 0;
    for (;;) {
        pid_t r = waitpid(pid, &st, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (status)
            *status = st;
        return r < 0 ? -errno : r;
    }
}

/* The pid of this process as /proc names it (the run lives in a pid
 * namespace of its own, /proc is the machine's). */
static unsigned proc_pid(void)
{
    char buf[32];
    ssize_t n = readlink("/proc/self", buf, sizeof buf - 1);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    return (unsigned)strtoul(buf, NULL, 10);
}

static int open_file(const char *path, int flags)
{
    int fd = open(path, flags | O_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

/* One write(2) of text to the file at path, as `echo -n text > path`:
 * the errno of the open or of the write. */
static int write_file_once(const char *path, const char *text)
{
    int fd = open_file(path, O_WRONLY);
    if (fd < 0)
        return -fd;
    int e = write_all(fd, text, strlen(text));
    close(fd);
    return e;
}

static int set_rlimit(int resource, unsigned long long limit)
{
    struct rlimit rl;
    rl.rlim_cur = rl.rlim_max = limit == ULLONG_MAX ? RLIM_INFINITY : (rlim_t)limit;
    return err_of(setrlimit(resource, &rl));
}

static int set_nproc_limit(unsigned long long limit)
{
    return set_rlimit(RLIMIT_NPROC, limit);
}

/* The signal sigqueue and sigtimedwait use, blocked by every task so that
 * what is sent stays pending. */
static sigset_t queued_signal(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGRTMIN);
    return set;
}

static void block_queued_signal(void)
{
    sigset_t set = queued_signal();
    (void)sigprocmask(SIG_BLOCK, &set, NULL);
}

static int sigtimedwait_now(void)
{
    sigset_t set = queued_signal();
    struct timespec zero = { 0, 0 };
    return sigtimedwait(&set, NULL, &zero) < 0 ? errno : 0;
}

/* RLIMIT_NPROC as high as this process may set it: unlimited, or else
 * its hard limit (a root without CAP_SYS_RESOURCE). */
static int raise_nproc_limit(void)
{
    struct rlimit rl;
    if (set_nproc_limit(ULLONG_MAX) == 0)
        return 0;
    if (getrlimit(RLIMIT_NPROC, &rl) != 0)
        return errno;
    rl.rlim_cur = rl.rlim_max;
    return err_of(setrlimit(RLIMIT_NPROC, &rl));
}

static void die_with_parent(void) { (void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0); }

static void set_dumpable(void) { (void)prctl(PR_SET_DUMPABLE, 1, 0, 0, 0); }

static void sleep_ns(long long ns)
{
    struct timespec t = { (time_t)(ns / 1000000000), (long)(ns % 1000000000) };
    while (nanosleep(&t, &t) != 0 && errno == EINTR)
        ;
}

/* ---- capabilities (capget/capset of the three sets, two words each) ---- */

struct cap_header { uint32_t version; int pid; };
struct cap_data { uint32_t effective, permitted, inheritable; };
#define CAP_VERSION_3 0x20080522

enum cap_edit { CAPS_EFFECTIVE_FROM_PERMITTED, CAPS_CLEAR, CAPS_DROP_EFFECTIVE, CAPS_DROP_HELD };

static int edit_capabilities(enum cap_edit how, const int *caps, int n)
{
    struct cap_header h = { CAP_VERSION_3, 0 };
    struct cap_data d[2];
    if (syscall(SYS_capget, &h, d) != 0)
        return errno;
    for (int w = 0; w < 2; w++) {
        if (how == CAPS_EFFECTIVE_FROM_PERMITTED)
            d[w].effective = d[w].permitted;
        if (how == CAPS_CLEAR)
            d[w].effective = d[w].permitted = d[w].inheritable = 0;
    }
    for (int i = 0; i < n && (how == CAPS_DROP_EFFECTIVE || how == CAPS_DROP_HELD); i++) {
        if (caps[i] < 0 || caps[i] >= 64)
            continue;
        uint32_t mask = ~(1u << (caps[i] % 32));
        struct cap_data *w = &d[caps[i] / 32];
        w->effective &= mask;
        if (how == CAPS_DROP_HELD) {
            w->permitted &= mask;
            w->inheritable &= mask;
        }
    }
    return err_of(syscall(SYS_capset, &h, d));
}

/* capget of the task itself: its effective, permitted and inheritable
 * sets as values, bit N of each being capability N. */
static int report_caps(unsigned long long **values, int *n)
{
    struct cap_header h = { CAP_VERSION_3, 0 };
    struct cap_data d[2];
    if (syscall(SYS_capget, &h, d) != 0)
        return errno;
    *values = malloc(sizeof **values * 3);
    if (!*values)
        return ENOMEM;
    (*values)[0] = d[0].effective | (unsigned long long)d[1].effective << 32;
    (*values)[1] = d[0].permitted | (unsigned long long)d[1].permitted << 32;
    (*values)[2] = d[0].inheritable | (unsigned long long)d[1].inheritable << 32;
    *n = 3;
    return 0;
}

/* Become uid/gid in the current namespace, keeping every capability
 * effective (to join a user namespace as that uid next). */
static int become_keeping_caps(unsigned uid, unsigned gid)
{
    if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0)
        return errno;
    if (setresgid(gid, gid, gid) != 0 || setresuid(uid, uid, uid) != 0)
        return errno;
    return edit_capabilities(CAPS_EFFECTIVE_FROM_PERMITTED, NULL, 0);
}

/* ---- the results: one line per call, as nssim's executor writes them ---- */

static const char *errno_name(int e, char buf[16])
{
    const char *known = known_errno_name(e);
    if (known)
        return known;
    snprintf(buf, 16, "E%d", e);
    return buf;
}

/* An `E` line: the world or an instance could not be set up. */
static void report_error(int instance, const char *what, int e)
{
    char line[512], name[16];
    char who[16] = "-";
    if (instance >= 0)
        snprintf(who, sizeof who, "%d", instance);
    snprintf(line, sizeof line, "E\t%s\t%s: %s\n", who, what, errno_name(e, name));
    (void)write_all(results_fd, line, strlen(line));
}

/* An `R` line: instance, op index, result, the values it reported. */
/* A word the call under way reports (a received uevent's ACTION, which
 * may be empty or as long as the message), printed after its values and
 * then cleared; word_reported tells an empty word from none. */
static char reported_word[8192 + 1];
static int word_reported;

static void record(int instance, int op, int e, const unsigned long long *values, int n)
{
    char name[16];
    size_t cap = 64 + sizeof reported_word + 21 * (size_t)(n > 0 ? n : 1);
    char *line = malloc(cap);
    if (!line)
        return;
    int len = snprintf(line, cap, "R\t%d\t%d\t%s\t", instance, op, e ? errno_name(e, name) : "ok");
    if (n == 0)
        len += snprintf(line + len, cap - (size_t)len, "-");
    for (int i = 0; i < n; i++)
        len += snprintf(line + len, cap - (size_t)len, "%s%llu", i ? "," : "", values[i]);
    if (word_reported)
        len += snprintf(line + len, cap - (size_t)len, "\t%s", reported_word);
    reported_word[0] = 0;
    word_reported = 0;
    len += snprintf(line + len, cap - (size_t)len, "\n");
    (void)write_all(results_fd, line, (size_t)len);
    free(line);
}

/* ---- uevent sockets (NETLINK_KOBJECT_UEVENT) ---- */

static int uevent_socket(void)
{
    int fd = socket(AF_NETLINK, SOCK_RAW, NETLINK_KOBJECT_UEVENT);
    return fd < 0 ? -errno : fd;
}

/* A listener bound to group 1; SO_RCVBUF asks for half the buffer, since
 * the kernel doubles what it is asked for. Kept across execve. */
static int uevent_listen(long long rcvbuf, int *sock)
{
    int fd = uevent_socket();
    if (fd < 0)
        return -fd;
    int half = rcvbuf / 2 > INT_MAX ? INT_MAX : (int)(rcvbuf / 2);
    struct sockaddr_nl addr;
    memset(&addr, 0, sizeof addr);
    addr.nl_family = AF_NETLINK;
    addr.nl_groups = 1;
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &half, sizeof half) != 0
        || bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
        int e = errno;
        close(fd);
        return e;
    }
    close_fd(*sock);
    *sock = fd;
    return 0;
}

/* Receive one uevent without waiting; its SEQNUM, when it has one. */
static int uevent_recv(int sock, int wait, unsigned long long *seqnum, int *n)
{
    static char buf[8192 + 1];
    if (sock < 0)
        return ENOENT;
    ssize_t len;
    while ((len = recv(sock, buf, sizeof buf - 1, wait ? 0 : MSG_DONTWAIT)) < 0 && errno == EINTR)
        ;
    if (len < 0)
        return errno;
    buf[len] = 0;
    /* The ACTION: the header's word before the '@'. */
    size_t word = strcspn(buf, "@\n");
    if (word >= sizeof reported_word)
        word = sizeof reported_word - 1;
    memcpy(reported_word, buf, word);
    reported_word[word] = 0;
    word_reported = 1;
    for (size_t i = 0; i < word; i++)
        if (reported_word[i] == ',' || reported_word[i] == '\t')
            reported_word[i] = ' ';
    for (ssize_t at = 0; at < len; at += (ssize_t)strlen(buf + at) + 1) {
        if (strncmp(buf + at, "SEQNUM=", 7) == 0) {
            *seqnum = strtoull(buf + at + 7, NULL, 10);
            *n = 1;
            break;
        }
    }
    return 0;
}

/* Send payload to the kernel uevent socket of this network namespace as
 * one request asking for an ack: the ack's error is the result. */
static int uevent_inject(const char *payload)
{
    int fd = uevent_socket();
    if (fd < 0)
        return -fd;
    size_t len = NLMSG_HDRLEN + strlen(payload) + 1;
    char *msg = calloc(1, len);
    char ack[256];
    struct timeval timeout = { 2, 0 };
    struct sockaddr_nl kernel;
    int e = 0;
    memset(&kernel, 0, sizeof kernel);
    kernel.nl_family = AF_NETLINK;
    if (!msg) {
        close(fd);
        return ENOMEM;
    }
    struct nlmsghdr *h = (struct nlmsghdr *)msg;
    h->nlmsg_len = (uint32_t)len;
    h->nlmsg_type = NLMSG_MIN_TYPE;
    h->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
    h->nlmsg_seq = 1;
    memcpy(msg + NLMSG_HDRLEN, payload, strlen(payload) + 1);
    (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    if (sendto(fd, msg, len, 0, (struct sockaddr *)&kernel, sizeof kernel) < 0) {
        e = errno;
    } else {
        ssize_t n = recv(fd, ack, sizeof ack, 0);
        struct nlmsghdr reply;
        int32_t error;
        if (n < 0) {
            e = errno;
        } else if ((size_t)n < NLMSG_HDRLEN + sizeof error) {
            e = EIO;
        } else {
            memcpy(&reply, ack, sizeof reply);
            memcpy(&error, ack + NLMSG_HDRLEN, sizeof error);
            e = reply.nlmsg_type != NLMSG_ERROR ? EIO : -error;
        }
    }
    free(msg);
    close(fd);
    return e;
}

/* A uevent tagged with this network namespace: its loopback device
 * (ifindex 1) is renamed, which sends a `move` uevent. SIOCSIFNAME finds
 * the device by its old name, so a rename that another task's rename beat
 * finds none (ENODEV), sends nothing, and is tried again. */
static int rename_loopback_once(int fd)
{
    struct ifreq req;
    memset(&req, 0, sizeof req);
    req.ifr_ifindex = 1;
    if (ioctl(fd, SIOCGIFNAME, &req) != 0)
        return errno;
    /* A name other than its own: a rename to the same name sends none. */
    const char *name = strcmp(req.ifr_name, "nssim0") == 0 ? "nssim1" : "nssim0";
    memset(req.ifr_newname, 0, sizeof req.ifr_newname);
    memcpy(req.ifr_newname, name, strlen(name));
    if (ioctl(fd, SIOCSIFNAME, &req) != 0)
        return errno;
    return 0;
}

static int rename_loopback(void)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    int e = ENODEV;
    if (fd < 0)
        return errno;
    for (int attempt = 0; attempt < 1000 && e == ENODEV; attempt++)
        e = rename_loopback_once(fd);
    close(fd);
    return e;
}

/* ---- a task instance ---- */

struct child { pid_t pid; int life; };

/* What a task holds in the kernel between ops. */
struct state {
    struct child *children;   /* live children, oldest first */
    int n_children, cap_children;
    int sock;                 /* its uevent socket, -1 none */
    int opened;               /* the uid_map open_uid_map_of kept, -1 none */
    int ns_files[N_NS_FILES]; /* the ns/user files open_ns_user kept, by name index, -1 none */
    int shmid, msqid, semid;  /* the ids the last shmget, msgget and semget returned, -1 none */
    void **shm_addrs;         /* where shmat attached, oldest first (exec drops them) */
    int n_shm_addrs;
    int home_pid_level;       /* the level of the pid namespace the task started in */
};

static int pid_ns_level(void);

/* A state holding nothing. */
static void state_init(struct state *s)
{
    memset(s, 0, sizeof *s);
    s->sock = s->opened = s->shmid = s->msqid = s->semid = -1;
    for (int f = 0; f < N_NS_FILES; f++)
        s->ns_files[f] = -1;
}

static int me;                /* this process's instance */

/* The pid table: each instance's /proc pid (0 for one not started yet) in
 * a memfd at PID_TABLE_FD, kept across fork and execve, so that every
 * task, and every child forked later, reads a pid when it needs it. */
static void set_pid(int i, unsigned pid)
{
    (void)pwrite(PID_TABLE_FD, &pid, sizeof pid, (off_t)i * (off_t)sizeof pid);
}

static unsigned pid_of(int i)
{
    unsigned pid = 0;
    if (i < 0 || pread(PID_TABLE_FD, &pid, sizeof pid, (off_t)i * (off_t)sizeof pid) != sizeof pid)
        return 0;
    return pid;
}

static void make_pid_table(void)
{
    int fd = memfd_create("nssim-pids", 0);
    if (fd < 0 || ftruncate(fd, (off_t)sizeof(unsigned) * (N_INSTANCES + 1)) != 0
        || dup2(fd, PID_TABLE_FD) != PID_TABLE_FD) {
        report_error(-1, "the pid table", errno);
        _exit(1);
    }
    close(fd);
}

/* A child of the task lets go of what the task holds. */
static void in_child_of(const struct state *s)
{
    for (int i = 0; i < s->n_children; i++)
        close_fd(s->children[i].life);
    close_fd(s->sock);
    close_fd(s->opened);
    for (int f = 0; f < N_NS_FILES; f++)
        close_fd(s->ns_files[f]);
}

/* Keep a live child (life: the write end of its pipe, -1 for a child that
 * acts). */
static void push_child(struct state *s, pid_t pid, int life)
{
    if (s->n_children == s->cap_children) {
        s->cap_children = s->cap_children ? 2 * s->cap_children : 8;
        s->children = realloc(s->children, (size_t)s->cap_children * sizeof *s->children);
        if (!s->children)
            _exit(1);
    }
    s->children[s->n_children].pid = pid;
    s->children[s->n_children].life = life;
    s->n_children++;
}

/* A child that stays alive until the task's exit() or its own end: it
 * waits for the end of a pipe only the task holds open (a kill could be
 * refused once the task has changed its uids). */
static int keep_child(struct state *s, unsigned long flags)
{
    int life[2];
    make_pipe(life);
    long pid = clone_process(flags);
    if (pid < 0) {
        close(life[0]);
        close(life[1]);
        return (int)-pid;
    }
    if (pid == 0) {
        char byte;
        in_child_of(s);
        close(life[1]);
        (void)read_full(life[0], &byte, 1);
        _exit(0);
    }
    close(life[0]);
    keep_on_exec(life[1]);
    push_child(s, (pid_t)pid, life[1]);
    return 0;
}

static __attribute__((noreturn)) void run_ops(long long from, struct state *s);

/* A child that acts: it publishes its pid, tells the task it has (so that
 * the task's next op finds it), and runs the ops of instance `index` with
 * the task's kept namespace files and opened uid_map. The task reaps it once it has run them
 * all. */
static int start_child(struct state *s, unsigned long flags, int index)
{
    int ready[2];
    char byte = 'r';
    if (index < 0)
        return EINVAL;
    make_pipe(ready);
    long pid = clone_process(flags);
    if (pid < 0) {
        close(ready[0]);
        close(ready[1]);
        return (int)-pid;
    }
    if (pid == 0) {
        struct state inherited;
        state_init(&inherited);
        memcpy(inherited.ns_files, s->ns_files, sizeof inherited.ns_files);
        for (int f = 0; f < N_NS_FILES; f++)
            s->ns_files[f] = -1;
        inherited.opened = s->opened;
        s->opened = -1;
        inherited.msqid = s->msqid;
        inherited.semid = s->semid;
        inherited.shmid = s->shmid;
        inherited.shm_addrs = s->shm_addrs;   /* the mappings are copied */
        inherited.n_shm_addrs = s->n_shm_addrs;
        inherited.home_pid_level = s->home_pid_level;
        in_child_of(s);
        close(ready[0]);
        me = index;
        set_pid(index, proc_pid());
        (void)write_all(ready[1], &byte, 1);
        close(ready[1]);
        run_ops(0, &inherited);
    }
    close(ready[1]);
    (void)read_full(ready[0], &byte, 1);
    close(ready[0]);
    push_child(s, (pid_t)pid, -1);
    return 0;
}

/* The newest child exits (its pipe closed) and is reaped; a child that
 * acts (no pipe) is waited for until it has run its ops. */
static int end_child(struct state *s)
{
    if (s->n_children == 0)
        return ECHILD;
    struct child c = s->children[--s->n_children];
    close_fd(c.life);
    int r = wait_for(c.pid, NULL);
    return r < 0 ? -r : 0;
}

/* A child calls unshare(flags) and exits with its errno; the task reaps
 * it (`unshare -U true`). */
static int unshare_and_exit(const struct state *s, unsigned long flags)
{
    long pid = clone_process(0);
    int status;
    if (pid < 0)
        return (int)-pid;
    if (pid == 0) {
        in_child_of(s);
        _exit(unshare((int)flags) == 0 ? 0 : errno);
    }
    if (wait_for((pid_t)pid, &status) < 0)
        return ECHILD;
    return WIFEXITED(status) ? WEXITSTATUS(status) : EINTR;
}

static void proc_path(char *buf, size_t len, int target, const char *file)
{
    unsigned pid = pid_of(target);
    snprintf(buf, len, "/proc/%u/%s", pid, file);
}

/* sigqueue(3) of SIGRTMIN to instance target: an SI_QUEUE signal sent
 * through its /proc directory as a pidfd, since the tasks run in a pid
 * namespace of their own; a process already reaped is ESRCH, as sigqueue
 * by pid says. */
static int sigqueue_to(int target)
{
    char path[64];
    proc_path(path, sizeof path, target, "");
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? ESRCH : errno;
    siginfo_t info;
    memset(&info, 0, sizeof info);
    info.si_signo = SIGRTMIN;
    info.si_code = SI_QUEUE;
    int e = syscall(SYS_pidfd_send_signal, fd, SIGRTMIN, &info, 0) < 0 ? errno : 0;
    close(fd);
    return e;
}

static int setns_into(int target, const char *ns, int nstype)
{
    char path[64], file[32];
    snprintf(file, sizeof file, "ns/%s", ns);
    proc_path(path, sizeof path, target, file);
    int fd = open_file(path, O_RDONLY);
    if (fd < 0)
        return -fd;
    int e = err_of(setns(fd, nstype));
    close(fd);
    return e;
}

/* Every number of a /proc map file: first, lower and count of each line. */
static int read_map(const char *path, unsigned long long **values, int *n)
{
    static char text[65536];
    int fd = open_file(path, O_RDONLY);
    if (fd < 0)
        return -fd;
    size_t len = 0;
    for (;;) {
        ssize_t r = read(fd, text + len, sizeof text - 1 - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            close(fd);
            return e;
        }
        if (r == 0 || (len += (size_t)r) == sizeof text - 1)
            break;
    }
    close(fd);
    text[len] = 0;
    *values = malloc(sizeof **values * (len / 2 + 1));
    if (!*values)
        return ENOMEM;
    for (char *p = text, *end; *p; p = end) {
        unsigned long long v = strtoull(p, &end, 10);
        if (end == p) {
            end = p + 1;
            continue;
        }
        (*values)[(*n)++] = v;
    }
    return 0;
}

/* setgroups(2) of the gids listed in text, separated by blanks. */
static int set_groups(const char *text)
{
    gid_t gids[64];
    size_t n = 0;
    char *end;
    for (const char *p = text; *p;) {
        if (*p == ' ' || *p == '\t' || *p == '\n') {
            p++;
            continue;
        }
        if (n == sizeof gids / sizeof gids[0])
            return E2BIG;
        gids[n++] = (gid_t)strtoul(p, &end, 10);
        p = end;
    }
    return err_of(setgroups(n, gids));
}


/* ---- SysV message queues and semaphores (the ids the task keeps) ---- */

/* msgsnd of size bytes of type 1 without waiting; the buffer is cut at
 * 1 MiB, past any kernel.msgmax a run's namespace has, which the kernel
 * checks first. */
static int msg_send(int id, size_t size)
{
    size_t len = size < (1u << 20) ? size : (1u << 20);
    long *buf = calloc(1, sizeof(long) + len);
    if (!buf)
        return ENOMEM;
    buf[0] = 1;
    int e = msgsnd(id, buf, size, IPC_NOWAIT) < 0 ? errno : 0;
    free(buf);
    return e;
}

/* msgrcv of the oldest message without waiting: reports its size. */
static int msg_receive(int id, size_t size, unsigned long long **values, int *n)
{
    size_t len = size < (1u << 20) ? size : (1u << 20);
    long *buf = calloc(1, sizeof(long) + len);
    if (!buf)
        return ENOMEM;
    ssize_t got = msgrcv(id, buf, size, 0, IPC_NOWAIT);
    int e = got < 0 ? errno : 0;
    free(buf);
    if (e)
        return e;
    *values = malloc(sizeof **values);
    if (!*values)
        return ENOMEM;
    (*values)[0] = (unsigned long long)got;
    *n = 1;
    return 0;
}

/* msgctl: IPC_STAT reports msg_qnum, msg_cbytes and msg_qbytes. */
static int msg_ctl(int id, int cmd, unsigned long long **values, int *n)
{
    struct msqid_ds ds;
    if (msgctl(id, cmd, &ds) < 0)
        return errno;
    if (cmd != IPC_STAT)
        return 0;
    *values = malloc(sizeof **values * 3);
    if (!*values)
        return ENOMEM;
    (*values)[0] = ds.msg_qnum;
    (*values)[1] = ds.__msg_cbytes;
    (*values)[2] = ds.msg_qbytes;
    *n = 3;
    return 0;
}

/* shmat of the kept segment, read and write; the address kept for
 * shmdt. */
static int shm_attach(struct state *s)
{
    void **grown = realloc(s->shm_addrs, sizeof *grown * (size_t)(s->n_shm_addrs + 1));
    if (!grown)
        return ENOMEM;
    s->shm_addrs = grown;
    void *addr = shmat(s->shmid, NULL, 0);
    if (addr == (void *)-1)
        return errno;
    s->shm_addrs[s->n_shm_addrs++] = addr;
    return 0;
}

/* shmctl: IPC_STAT reports shm_segsz and shm_nattch. */
static int shm_ctl(int id, int cmd, unsigned long long **values, int *n)
{
    struct shmid_ds ds;
    if (shmctl(id, cmd, &ds) < 0)
        return errno;
    if (cmd != IPC_STAT)
        return 0;
    *values = malloc(sizeof **values * 2);
    if (!*values)
        return ENOMEM;
    (*values)[0] = ds.shm_segsz;
    (*values)[1] = ds.shm_nattch;
    *n = 2;
    return 0;
}

/* semctl's fourth argument, which the program defines (semctl(2)). */
union semun {
    int val;
    struct semid_ds *buf;
    unsigned short *array;
};

/* semctl: GETVAL reports the value, IPC_STAT the set's semaphores. */
static int sem_ctl(int id, int num, int cmd, unsigned long long **values, int *n)
{
    struct semid_ds ds;
    union semun arg = { .buf = &ds };
    int r = semctl(id, num, cmd, arg);
    if (r < 0)
        return errno;
    if (cmd != GETVAL && cmd != IPC_STAT)
        return 0;
    *values = malloc(sizeof **values);
    if (!*values)
        return ENOMEM;
    (*values)[0] = cmd == GETVAL ? (unsigned long long)r : (unsigned long long)ds.sem_nsems;
    *n = 1;
    return 0;
}

/* getresuid or getresgid: the three ids as values. */
static int report_ids(enum op_kind kind, unsigned long long **values, int *n)
{
    unsigned r, e, s;
    int failed = kind == OP_GETRESUID ? getresuid(&r, &e, &s) : getresgid(&r, &e, &s);
    if (failed)
        return errno;
    *values = malloc(sizeof **values * 3);
    if (!*values)
        return ENOMEM;
    (*values)[0] = r;
    (*values)[1] = e;
    (*values)[2] = s;
    *n = 3;
    return 0;
}

static int run_op(const struct op *op, struct state *s, unsigned long long **values, int *n)
{
    char path[128];
    switch (op->kind) {
    case OP_UNSHARE: {
        return err_of(unshare((int)op->flags));
    }
    case OP_SYSCTL_WRITE: {
        char text[32];
        snprintf(text, sizeof text, "%lld\n", op->value);
        return write_file_once(op->path, text);
    }
    case OP_UEVENT_LISTEN:
        return uevent_listen(op->value, &s->sock);
    case OP_UEVENT_RECV:
        *values = malloc(sizeof **values);
        return *values ? uevent_recv(s->sock, (int)op->value, *values, n) : ENOMEM;
    case OP_UEVENT_CLOSE:
        if (s->sock < 0)
            return ENOENT;
        close(s->sock);
        s->sock = -1;
        return 0;
    case OP_UEVENT_INJECT:
        return uevent_inject(op->text);
    case OP_UEVENT_NETDEV_EVENT:
        return rename_loopback();
    case OP_SLEEP:
        sleep_ns(op->value);
        return 0;
    case OP_WRITE_FILE:
        return write_file_once(op->path, op->text);
    case OP_POST:
        return write(EVENT_FDS + 2 * (int)op->value + 1, "e", 1) == 1 ? 0 : errno;
    case OP_WAIT: {
        char byte;
        ssize_t r;
        while ((r = read(EVENT_FDS + 2 * (int)op->value, &byte, 1)) < 0 && errno == EINTR)
            ;
        return r == 1 ? 0 : r == 0 ? EPIPE : errno;
    }
    case OP_OPEN_NS_USER: {
        proc_path(path, sizeof path, op->target, "ns/user");
        int fd = open(path, O_RDONLY);   /* kept across execve */
        if (fd < 0)
            return errno;
        close_fd(s->ns_files[op->value]);
        s->ns_files[op->value] = fd;
        return 0;
    }
    case OP_SETNS_FD:
        return s->ns_files[op->value] < 0 ? EBADF
                                          : err_of(setns(s->ns_files[op->value], CLONE_NEWUSER));
    case OP_CLOSE_FD:
        if (s->ns_files[op->value] < 0)
            return EBADF;
        close(s->ns_files[op->value]);
        s->ns_files[op->value] = -1;
        return 0;
    case OP_WRITE_FILE_OF:
        proc_path(path, sizeof path, op->target, op->path);
        return write_file_once(path, op->text);
    case OP_OPEN_UID_MAP_OF: {
        proc_path(path, sizeof path, op->target, "uid_map");
        int fd = open(path, O_WRONLY);   /* kept across execve */
        if (fd < 0)
            return errno;
        close_fd(s->opened);
        s->opened = fd;
        return 0;
    }
    case OP_WRITE_OPENED:
        return s->opened < 0 ? EBADF : write_all(s->opened, op->text, strlen(op->text));
    case OP_READ_MAP_OF:
        proc_path(path, sizeof path, op->target, op->path);
        return read_map(path, values, n);
    case OP_SETNS:
        return setns_into(op->target, op->path, (int)op->flags);
    case OP_UNSHARE_AND_EXIT:
        return unshare_and_exit(s, op->flags);
    case OP_FORK:
        return keep_child(s, op->flags);
    case OP_FORK_CHILD:
        return start_child(s, op->flags, op->target);
    case OP_EXIT:
        return end_child(s);
    case OP_SETUID:
        return err_of(setuid((uid_t)op->value));
    case OP_SETRESUID:
        return err_of(setresuid(op->ids[0], op->ids[1], op->ids[2]));
    case OP_SETGID:
        return err_of(setgid((gid_t)op->value));
    case OP_SETRESGID:
        return err_of(setresgid(op->ids[0], op->ids[1], op->ids[2]));
    case OP_SETGROUPS:
        return set_groups(op->text);
    case OP_OPEN: {
        int fd = open(op->path, (int)op->value | O_CLOEXEC);
        if (fd < 0)
            return errno;
        close(fd);
        return 0;
    }
    case OP_CAPGET:
        return report_caps(values, n);
    case OP_NS_ID: {
        struct stat st;
        if (stat(op->path, &st) != 0)
            return errno;
        *values = malloc(sizeof **values);
        if (!*values)
            return ENOMEM;
        (*values)[0] = st.st_ino;
        *n = 1;
        return 0;
    }
    case OP_GETRESUID:
    case OP_GETRESGID:
        return report_ids(op->kind, values, n);
    case OP_SETRLIMIT:
        return set_rlimit((int)op->flags, (unsigned long long)op->value);
    case OP_SIGQUEUE:
        return sigqueue_to(op->target);
    case OP_SIGTIMEDWAIT:
        return sigtimedwait_now();
    case OP_MQ_OPEN: {
        struct mq_attr attr = { .mq_maxmsg = (long)op->value, .mq_msgsize = (long)op->flags };
        /* The raw call takes the name without a leading '/'; the
         * descriptor stays open until the task exits. */
        long fd = syscall(SYS_mq_open, op->path, O_CREAT | O_EXCL | O_RDWR, 0600, &attr);
        return fd < 0 ? errno : 0;
    }
    case OP_MQ_OPEN_EXISTING: {
        /* No O_CREAT: the queue must exist; kept open until the exit. */
        long fd = syscall(SYS_mq_open, op->path, O_RDWR, 0, NULL);
        return fd < 0 ? errno : 0;
    }
    case OP_MQ_UNLINK:
        return syscall(SYS_mq_unlink, op->path) < 0 ? errno : 0;
    case OP_SHMGET: {
        int id = shmget((key_t)op->value, (size_t)op->ids[0], (int)op->flags);
        if (id < 0)
            return errno;
        s->shmid = id;
        return 0;
    }
    case OP_SHM_LOCK:
    case OP_SHM_UNLOCK:
        return shmctl(s->shmid, op->kind == OP_SHM_LOCK ? SHM_LOCK : SHM_UNLOCK, NULL) < 0
            ? errno : 0;
    case OP_SHMAT:
        return shm_attach(s);
    case OP_SHMDT:
        if (s->n_shm_addrs == 0)
            return EINVAL;
        return shmdt(s->shm_addrs[--s->n_shm_addrs]) < 0 ? errno : 0;
    case OP_SHMCTL:
        return shm_ctl(s->shmid, (int)op->flags, values, n);
    case OP_GETPID: {
        /* The numbers of the namespace the task started in are the
         * machine's: reported only below it. */
        pid_t nr = op->value ? getppid() : getpid();
        if (pid_ns_level() <= s->home_pid_level)
            return 0;
        *values = malloc(sizeof **values);
        if (!*values)
            return ENOMEM;
        (*values)[0] = (unsigned long long)nr;
        *n = 1;
        return 0;
    }
    case OP_MSGGET: {
        int id = msgget((key_t)op->value, (int)op->flags);
        if (id < 0)
            return errno;
        s->msqid = id;
        return 0;
    }
    case OP_MSGSND:
        return msg_send(s->msqid, (size_t)op->value);
    case OP_MSGRCV:
        return msg_receive(s->msqid, (size_t)op->value, values, n);
    case OP_MSGCTL:
        return msg_ctl(s->msqid, (int)op->flags, values, n);
    case OP_SEMGET: {
        int id = semget((key_t)op->value, (int)op->ids[0], (int)op->flags);
        if (id < 0)
            return errno;
        s->semid = id;
        return 0;
    }
    case OP_SEMOP: {
        struct sembuf sop = { .sem_num = (unsigned short)op->ids[0],
                              .sem_op = (short)op->value, .sem_flg = IPC_NOWAIT };
        return semop(s->semid, &sop, 1) < 0 ? errno : 0;
    }
    case OP_SEMCTL:
        return sem_ctl(s->semid, (int)op->ids[0], (int)op->flags, values, n);
    case OP_SEMCTL_SETVAL:
    {
        union semun arg = { .val = (int)op->value };
        return semctl(s->semid, (int)op->ids[0], SETVAL, arg) < 0 ? errno : 0;
    }
    case OP_EXECVE:
        break;   /* run_ops makes it */
    }
    return ENOSYS;
}

/* execve of this program, which resumes the task at pos + 1 with what it
 * holds; returns only when the kernel refused it. */
static int execve_self(long long pos, const struct state *s)
{
    int n = 12 + N_NS_FILES + 2 * s->n_children, i = 0;
    char **argv = calloc((size_t)n + 1, sizeof *argv);
    char *envp[] = { NULL };
    if (!argv)
        return ENOMEM;
#define ARG(...) do { if (asprintf(&argv[i++], __VA_ARGS__) < 0) return ENOMEM; } while (0)
    ARG("nssim-export");
    ARG("--resume");
    ARG("%d", me);
    ARG("%lld", pos);
    ARG("%d", results_fd);
    ARG("%d", s->sock);
    ARG("%d", s->opened);
    ARG("%d", s->shmid);        /* ids are numbers; exec drops the attachments */
    ARG("%d", s->msqid);
    ARG("%d", s->semid);
    ARG("%d", s->home_pid_level);
    for (int f = 0; f < N_NS_FILES; f++)
        ARG("%d", s->ns_files[f]);
    ARG("%d", s->n_children);
    for (int c = 0; c < s->n_children; c++) {
        ARG("%d", (int)s->children[c].pid);
        ARG("%d", s->children[c].life);
    }
#undef ARG
    execve("/proc/self/exe", argv, envp);
    return errno;
}

/* The task exits: its children exit first and are reaped. */
static __attribute__((noreturn)) void finish(struct state *s)
{
    while (s->n_children > 0)
        (void)end_child(s);
    close_fd(s->sock);
    close_fd(s->opened);
    for (int f = 0; f < N_NS_FILES; f++)
        close_fd(s->ns_files[f]);
    _exit(0);
}

/* Run the task's ops from flattened position `from` (op from mod n of
 * pass from / n) to the end, then exit. */
static __attribute__((noreturn)) void run_ops(long long from, struct state *s)
{
    const struct task_spec *t = &TASKS[INSTANCES[me].task];
    long long total = (long long)t->n_ops * (long long)t->repeat;
    for (long long pos = from; pos < total; pos++) {
        int index = (int)(pos % t->n_ops);
        const struct op *op = &t->ops[index];
        unsigned long long *values = NULL;
        int n = 0;
        int e = op->kind == OP_EXECVE ? execve_self(pos, s) : run_op(op, s, &values, &n);
        if (op->kind != OP_SLEEP)
            record(me, index, e, values, n);
        free(values);
    }
    finish(s);
}

/* After its execve, a task records the execve's success and runs on. */
static int resume_main(int argc, char **argv)
{
    struct state s;
    state_init(&s);
    int k = 2;
    if (argc < 12 + N_NS_FILES)
        return 2;
    me = atoi(argv[k++]);
    long long pos = atoll(argv[k++]);
    results_fd = atoi(argv[k++]);
    s.sock = atoi(argv[k++]);
    s.opened = atoi(argv[k++]);
    s.shmid = atoi(argv[k++]);
    s.msqid = atoi(argv[k++]);
    s.semid = atoi(argv[k++]);
    s.home_pid_level = atoi(argv[k++]);
    for (int f = 0; f < N_NS_FILES; f++)
        s.ns_files[f] = atoi(argv[k++]);
    int n = atoi(argv[k++]);
    if (me < 0 || me >= N_INSTANCES || n < 0 || argc != k + 2 * n
        || fcntl(results_fd, F_GETFD) < 0)
        return 2;
    for (int c = 0; c < n; c++) {
        pid_t pid = (pid_t)atoi(argv[k++]);
        int life = atoi(argv[k++]);
        push_child(&s, pid, life);
    }
    const struct task_spec *t = &TASKS[INSTANCES[me].task];
    if (t->n_ops == 0)
        return 2;
    record(me, (int)(pos % t->n_ops), 0, NULL, 0);
    run_ops(pos + 1, &s);
    return 0;
}

/* The credentials the model gives the task: kuid and kgid uid in its user
 * namespace, every capability there when it is root in it or its creator,
 * none otherwise; its RLIMIT_NPROC, dropped capabilities and bounding set.
 * The ids are set in the initial namespace while capabilities are kept,
 * then the task joins its namespace (which gives it every capability
 * there), so that a uid the namespace does not map is possible too. */
static int enter_credentials(const struct task_spec *t, const int *userns_fds, const char **what)
{
    int e = 0;
#define STEP(name, call) do { *what = name; if ((e = (call)) != 0) return e; } while (0)
    if (t->has_nproc)
        STEP("setrlimit(NPROC)", set_nproc_limit(t->nproc));
    if (t->userns >= 0) {
        STEP("become", become_keeping_caps(t->uid, t->uid));
        STEP("setns(CLONE_NEWUSER)", err_of(setns(userns_fds[t->userns], CLONE_NEWUSER)));
    }
    /* Joining a user namespace gives a full bounding set, so the drops
     * are made once the task is in its own. */
    for (int i = 0; i < t->n_bounding_drop; i++)
        STEP("drop from the bounding set", err_of(prctl(PR_CAPBSET_DROP, t->bounding_drop[i], 0, 0, 0)));
    if (t->n_bounding_drop > 0)
        STEP("capset", edit_capabilities(CAPS_DROP_HELD, t->bounding_drop, t->n_bounding_drop));
    if (t->userns < 0 && t->uid != 0) {
        STEP("setresgid", err_of(setresgid(t->uid, t->uid, t->uid)));
        STEP("setresuid", err_of(setresuid(t->uid, t->uid, t->uid)));
    }
    if (t->userns >= 0 && !t->keeps_caps)
        STEP("capset", edit_capabilities(CAPS_CLEAR, NULL, 0));
    if (t->n_cap_drop > 0)
        STEP("capset", edit_capabilities(CAPS_DROP_EFFECTIVE, t->cap_drop, t->n_cap_drop));
#undef STEP
    return 0;
}

/* How many pid namespaces below the initial one this process is: the
 * entries of NSpid in /proc/self/status, less one; -1 if unreadable. */
static int pid_ns_level(void)
{
    FILE *f = fopen("/proc/self/status", "re");
    if (!f)
        return -1;
    char line[512];
    int level = -1;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "NSpid:", 6))
            continue;
        level = -1;
        for (char *tok = strtok(line + 6, " \t\n"); tok; tok = strtok(NULL, " \t\n"))
            level++;
        break;
    }
    fclose(f);
    return level;
}

/* A parent in the chain of nested pid namespaces: it lets go of the
 * barrier and the set-up's namespace files (the results pipe and the pid
 * table go when it exits with the task), waits for its child and exits
 * as it did. */
static __attribute__((noreturn)) void wait_in_chain(pid_t child, const int *userns_fds, const int *gate)
{
    if (gate) {
        close(gate[0]);
        close(gate[2]);
    }
    for (int u = 0; u < N_USERNS; u++)
        close(userns_fds[u]);
    int status = 0;
    pid_t got;
    while ((got = waitpid(child, &status, 0)) < 0 && errno == EINTR)
        ;
    _exit(got == child && WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

/* The set-up's nested pid namespaces (pid_ns_depth), made as global root
 * before the task takes its credentials: unshare(CLONE_NEWPID) and a
 * fork, again and again, as `unshare --pid --fork` in a loop, until the
 * process is that deep (the levels it is in already count). The task
 * goes on in the deepest process, and publishes its pid. */
static int nest_pid_namespaces(const struct task_spec *t, const int *userns_fds, const int *gate, const char **what)
{
    if (t->pid_ns_depth == 0)
        return 0;
    int level = pid_ns_level();
    if (level < 0) {
        *what = "NSpid of /proc/self/status";
        return EIO;
    }
    if (level > t->pid_ns_depth) {
        *what = "the task's pid namespace is deeper than its pid_ns_depth";
        return EINVAL;
    }
    for (; level < t->pid_ns_depth; level++) {
        if (unshare(CLONE_NEWPID)) {
            *what = "unshare(CLONE_NEWPID)";
            return errno;
        }
        pid_t child = fork();
        if (child < 0) {
            *what = "fork";
            return errno;
        }
        if (child > 0)
            wait_in_chain(child, userns_fds, gate);
    }
    set_pid(me, proc_pid());
    return 0;
}

/* An instance: its credentials, the barrier (gate: its read end, the
 * write end it closes, the ready pipe), then its ops. */
static __attribute__((noreturn)) void start_instance(int i, const int *userns_fds, const int *gate)
{
    const char *what = "";
    struct state s;
    state_init(&s);
    me = i;
    /* A task in nested pid namespaces publishes its pid at the end of
     * its chain, once it is there. */
    if (!TASKS[INSTANCES[i].task].pid_ns_depth)
        set_pid(i, proc_pid());
    if (gate)
        close(gate[1]);
    int e = nest_pid_namespaces(&TASKS[INSTANCES[i].task], userns_fds, gate, &what);
    if (e) {
        report_error(i, what, e);
        _exit(1);
    }
    e = enter_credentials(&TASKS[INSTANCES[i].task], userns_fds, &what);
    if (e) {
        report_error(i, what, e);
        _exit(1);
    }
    for (int u = 0; u < N_USERNS; u++)
        close(userns_fds[u]);
    set_dumpable();
    block_queued_signal();
    if (gate) {
        char byte = 'r';
        (void)write_all(gate[2], &byte, 1);
        close(gate[2]);
        (void)read_full(gate[0], &byte, 1);
        close(gate[0]);
    }
    s.home_pid_level = pid_ns_level();
    run_ops(0, &s);
}

static int starts_now(int i)
{
    if (TASKS[INSTANCES[i].task].child)
        return 0;   /* its parent forks it */
    int first = i == 0 || INSTANCES[i - 1].task != INSTANCES[i].task;
    return !TASKS[INSTANCES[i].task].sequential || first;
}

/* Fork every instance (the first of a sequential task), open the barrier
 * once all are ready, then reap until no process is left, forking a
 * sequential task's next instance when one exits. */
static void start_tasks(const int *userns_fds)
{
    pid_t running[N_INSTANCES + 1];
    int barrier[2], ready[2], expected = 0;
    make_pid_table();
    make_pipe(barrier);
    make_pipe(ready);
    for (int i = 0; i < N_INSTANCES; i++) {
        running[i] = 0;
        if (!starts_now(i))
            continue;
        int gate[3] = { barrier[0], barrier[1], ready[1] };
        long pid = clone_process(0);
        if (pid == 0)
            start_instance(i, userns_fds, gate);
        if (pid < 0) {
            report_error(i, "fork", (int)-pid);
            break;
        }
        running[i] = (pid_t)pid;
        expected++;
    }
    close(ready[1]);
    close(barrier[0]);
    char got[N_INSTANCES + 1];
    (void)read_full(ready[0], got, (size_t)expected);
    close(ready[0]);
    close(barrier[1]);   /* opens the barrier */
    for (;;) {
        int pid = wait_for(-1, NULL);
        if (pid < 0)
            break;
        for (int i = 0; i < N_INSTANCES; i++) {
            if (running[i] != pid)
                continue;
            running[i] = 0;
            int next = i + 1;
            if (next < N_INSTANCES && INSTANCES[next].task == INSTANCES[i].task && !starts_now(next)) {
                long child = clone_process(0);
                if (child == 0)
                    start_instance(next, userns_fds, NULL);
                if (child > 0)
                    running[next] = (pid_t)child;
            }
            break;
        }
    }
}

/* ---- the world: namespaces, maps, sysctls ---- */

/* Run one write in a child that first joins a user namespace: its errno
 * comes back as the child's exit status. */
static int write_in_userns(int userns_fd, const char *path, const char *text)
{
    long pid = clone_process(0);
    int status;
    if (pid < 0)
        return (int)-pid;
    if (pid == 0) {
        int e = err_of(setns(userns_fd, CLONE_NEWUSER));
        _exit(e ? e : write_file_once(path, text));
    }
    if (wait_for((pid_t)pid, &status) < 0)
        return ECHILD;
    return WIFEXITED(status) ? WEXITSTATUS(status) : EINTR;
}

static __attribute__((noreturn)) void fail(const char *what, const char *name, int e)
{
    char msg[256];
    snprintf(msg, sizeof msg, "%s%s%s", what, name ? " " : "", name ? name : "");
    report_error(-1, msg, e);
    _exit(1);
}

/* A set-up user namespace, made by a holder process with the owner's
 * uid (and its creator's RLIMIT_NPROC), its maps written from its
 * parent; held by an fd of /proc/PID/ns/user once the holder is gone. */
static int make_user_namespace(const struct userns_spec *u, const int *fds)
{
    int ready[2];
    char answer[64] = "";
    make_pipe(ready);
    long holder = clone_process(0);
    if (holder < 0)
        fail("fork of the creator of user namespace", u->name, (int)-holder);
    if (holder == 0) {
        int e = 0;
        close(ready[0]);
        if (u->has_nproc)
            e = set_nproc_limit(u->creator_nproc);
        if (!e)
            e = become_keeping_caps(u->owner, u->owner);
        if (!e && u->parent >= 0)
            e = err_of(setns(fds[u->parent], CLONE_NEWUSER));
        if (!e)
            e = err_of(unshare(CLONE_NEWUSER));
        set_dumpable();
        if (e)
            snprintf(answer, sizeof answer, "E %d\n", e);
        else
            snprintf(answer, sizeof answer, "%u\n", proc_pid());
        (void)write_all(ready[1], answer, strlen(answer));
        for (;;)
            pause();
    }
    close(ready[1]);
    ssize_t n = read(ready[0], answer, sizeof answer - 1);
    close(ready[0]);
    answer[n > 0 ? n : 0] = 0;
    int e = answer[0] == 'E' ? atoi(answer + 2) : answer[0] ? 0 : ESRCH;
    int fd = -1;
    if (!e) {
        char path[64];
        unsigned pid = (unsigned)strtoul(answer, NULL, 10);
        snprintf(path, sizeof path, "/proc/%u/ns/user", pid);
        fd = open_file(path, O_RDONLY);
        e = fd < 0 ? -fd : 0;
        const char *files[2] = { "uid_map", "gid_map" };
        const char *maps[2] = { u->uid_map, u->gid_map };
        for (int m = 0; m < 2 && !e; m++) {
            if (!maps[m])
                continue;
            snprintf(path, sizeof path, "/proc/%u/%s", pid, files[m]);
            e = u->parent < 0 ? write_file_once(path, maps[m])
                              : write_in_userns(fds[u->parent], path, maps[m]);
        }
    }
    kill((pid_t)holder, SIGKILL);
    (void)wait_for((pid_t)holder, NULL);
    if (e)
        fail("user namespace", u->name, e);
    return fd;
}

/* Pid 1 of the run's pid namespace: builds the world, starts the tasks,
 * reaps every process until none is left. */
static __attribute__((noreturn)) void world_root(int ask, int ack)
{
    int userns_fds[N_USERNS + 1];
    char byte = 'u';
    for (int u = 0; u <= N_USERNS; u++)
        userns_fds[u] = -1;
    die_with_parent();
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
        dup2(null, 0);
        dup2(null, 1);
        dup2(null, 2);
        close(null);
    }
    int e = err_of(setgroups(0, NULL));
    if (e)
        fail("setgroups", NULL, e);
    /* The model's tasks start without an RLIMIT_NPROC unless the scenario
     * gives one; raising the hard limit needs the initial namespace's
     * CAP_SYS_RESOURCE, so before any stand-in user namespace. */
    if ((e = raise_nproc_limit()))
        fail("setrlimit(NPROC)", NULL, e);
    /* The run's network and ipc namespaces come first, so that in a
     * stand-in initial user namespace they are charged to none of its
     * limits (as the model's initial namespaces are not). */
    if ((e = err_of(unshare(CLONE_NEWNET | CLONE_NEWIPC))))
        fail("cannot make the run's network and ipc namespaces", NULL, e);
    if (STAND_IN) {
        if ((e = err_of(unshare(CLONE_NEWUSER))))
            fail("cannot make the stand-in initial user namespace", NULL, e);
        (void)write_all(ask, &byte, 1);
        if (read_full(ack, &byte, 1) != 1)
            fail("the stand-in initial user namespace was not mapped", NULL, EIO);
    }
    close(ask);
    close(ack);
    /* As in the model, the sysctls apply once the set-up namespaces exist;
     * those of a set-up namespace are written from inside it. */
    for (int u = 0; u < N_USERNS; u++)
        userns_fds[u] = make_user_namespace(&USERNS[u], userns_fds);
    for (int i = 0; i < N_SYSCTLS; i++) {
        char text[32];
        const struct sysctl_spec *s = &SYSCTLS[i];
        if (s->userns < 0)
            continue;
        snprintf(text, sizeof text, "%lld\n", s->value);
        if ((e = write_in_userns(userns_fds[s->userns], s->path, text)))
            fail("sysctl", s->path, e);
    }
    for (int i = 0; i < N_SYSCTLS; i++) {
        char text[32];
        const struct sysctl_spec *s = &SYSCTLS[i];
        if (s->userns >= 0)
            continue;
        snprintf(text, sizeof text, "%lld\n", s->value);
        if ((e = write_file_once(s->path, text)))
            fail("sysctl", s->path, e);
    }
    int fd = open_file("/sys/kernel/uevent_seqnum", O_RDONLY);
    if (fd >= 0) {
        char seq[32], line[48];
        ssize_t n = read(fd, seq, sizeof seq - 1);
        close(fd);
        if (n > 0) {
            seq[n] = 0;
            seq[strcspn(seq, "\n")] = 0;
            snprintf(line, sizeof line, "B\t%s\n", seq);
            (void)write_all(results_fd, line, strlen(line));
        }
    }
    /* One pipe per event, at fixed fds kept across fork and execve: a
     * post writes a byte, a wait reads one. */
    for (int i = 0; i < N_EVENTS; i++) {
        int p[2];
        if (pipe(p) != 0 || dup2(p[0], EVENT_FDS + 2 * i) < 0 || dup2(p[1], EVENT_FDS + 2 * i + 1) < 0)
            fail("event pipe", NULL, errno);
        close(p[0]);
        close(p[1]);
    }
    start_tasks(userns_fds);
    /* Every task has exited: the queues the scenario made are unlinked,
     * so that their charge is back before the next run (the run's ipc
     * namespace would free them only later, from a work item). */
    for (int t = 0; t < N_TASKS; t++)
        for (int i = 0; i < TASKS[t].n_ops; i++)
            if (TASKS[t].ops[i].kind == OP_MQ_OPEN)
                (void)syscall(SYS_mq_unlink, TASKS[t].ops[i].path);
    _exit(0);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Copy the results pipe to standard output until every writer is gone
 * (1) or the deadline passes (0); *failed is set when an `E` line went by. */
/* Which groups of SYMPTOM_CALLS the current run has shown. */
static int symptom_seen[N_SYMPTOMS > 0 ? N_SYMPTOMS : 1];

/* An R line of the run: note the groups whose call it is. */
static void look_for_symptoms(const char *line)
{
    int instance, op, n = 0;
    if (sscanf(line, "R\t%d\t%d\t%n", &instance, &op, &n) != 2 || n == 0)
        return;
    const char *result = line + n;
    size_t len = strcspn(result, "\t\n");
    for (int i = 0; i < N_SYMPTOM_CALLS; i++) {
        const struct symptom_call *c = &SYMPTOM_CALLS[i];
        if (c->instance == instance && c->op == op && strlen(c->result) == len &&
            strncmp(c->result, result, len) == 0)
            symptom_seen[c->group] = 1;
    }
}

/* Whether the run showed every group. */
static int run_showed_the_bug(void)
{
    for (int g = 0; g < N_SYMPTOMS; g++)
        if (!symptom_seen[g])
            return 0;
    return N_SYMPTOMS > 0;
}

static int forward_lines(int fd, double deadline, int *failed)
{
    char buf[4096];
    char line[512];
    size_t line_len = 0;
    char prev = '\n';
    for (;;) {
        double left = deadline - now();
        if (left <= 0)
            return 0;
        struct pollfd p = { fd, POLLIN, 0 };
        int r = poll(&p, 1, (int)(left * 1000) + 1);
        if (r <= 0)
            continue;
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return 1;
        for (ssize_t i = 0; i < n; prev = buf[i++]) {
            if (prev == '\n' && buf[i] == 'E')
                *failed = 1;
            if (buf[i] == '\n') {
                line[line_len] = '\0';
                look_for_symptoms(line);
                line_len = 0;
            } else if (line_len + 1 < sizeof line) {
                line[line_len++] = buf[i];
            }
        }
        if (fwrite(buf, 1, (size_t)n, stdout) != (size_t)n)
            return 1;
        fflush(stdout);
    }
}

/* The stand-in initial user namespace maps every uid and gid to itself. */
static int map_stand_in(pid_t root, int ask, int ack)
{
    char byte;
    char path[64];
    const char *files[2] = { "uid_map", "gid_map" };
    if (read_full(ask, &byte, 1) != 1)
        return ESRCH;
    for (int m = 0; m < 2; m++) {
        snprintf(path, sizeof path, "/proc/%d/%s", (int)root, files[m]);
        int e = write_file_once(path, "0 0 4294967295\n");
        if (e) {
            fprintf(stderr, "cannot map the stand-in initial user namespace: %s: %s\n",
                    files[m], strerror(e));
            return e;
        }
    }
    return write_all(ack, "m", 1);
}

enum { RUN_ENDED, RUN_CUT_OFF, RUN_FAILED };

/* One run of the world, ended at the deadline. */
static int run_world(double deadline)
{
    int failed = 0;
    int results[2], ask[2], ack[2];
    make_pipe(results);
    keep_on_exec(results[1]);
    make_pipe(ask);
    make_pipe(ack);
    fflush(stdout);
    long root = clone_process(CLONE_NEWPID);
    if (root < 0) {
        fprintf(stderr, "cannot make the run's pid namespace: %s\n", strerror((int)-root));
        return RUN_FAILED;
    }
    if (root == 0) {
        close(results[0]);
        close(ask[0]);
        close(ack[1]);
        results_fd = results[1];
        world_root(ask[1], ack[0]);
    }
    close(results[1]);
    close(ask[1]);
    close(ack[0]);
    if (STAND_IN)
        (void)map_stand_in((pid_t)root, ask[0], ack[1]);
    close(ask[0]);
    close(ack[1]);
    int ended = forward_lines(results[0], deadline, &failed);
    if (!ended)
        kill((pid_t)root, SIGKILL);
    close(results[0]);
    (void)wait_for((pid_t)root, NULL);
    return failed ? RUN_FAILED : ended ? RUN_ENDED : RUN_CUT_OFF;
}

static int usage(const char *prog)
{
    fprintf(stderr, "usage: %s [--runs N] [-t SECONDS]\n"
            "  --runs N, -n N  runs of the scenario's world (default 1, at most 1000)\n"
            "  -t SECONDS      wall-clock time one run may take (default 15)\n"
            "exit status: 1 when a run reproduced the bug, 0 when none did, 2 when it could not run\n",
            prog);
    return 2;
}

/* The verdict after the runs: 1 when one reproduced the bug. */
static int verdict(long runs, long reproduced, long first)
{
    if (N_SYMPTOMS == 0) {
        printf("no verdict: the scenario's entry names no symptom a call returns; "
               "compare this output with the model (nssim run --on-kernel --kernel-output)\n");
        return 0;
    }
    if (reproduced == 0) {
        printf("not reproduced in %ld runs\n", runs);
        return 0;
    }
    printf("reproduced in %ld of %ld runs (first: run %ld): ", reproduced, runs, first);
    for (int g = 0; g < N_SYMPTOMS; g++)
        printf("%s%s", g ? "; and " : "", SYMPTOM_SHOWS[g]);
    printf("\n");
    return 1;
}

/* The set-up's files, in a directory of their own that every task may
 * search, made the working directory: tasks open them by name, also
 * after an execve. */
static char files_dir[] = "/tmp/nssim-files.XXXXXX";

static void remove_files(void)
{
    for (int i = 0; i < N_FILES; i++)
        unlink(FILES[i].name);
    if (chdir("/") == 0)
        rmdir(files_dir);
}

static int make_files(void)
{
    if (!mkdtemp(files_dir) || chmod(files_dir, 0755) != 0 || chdir(files_dir) != 0) {
        perror("the set-up's files");
        return -1;
    }
    for (int i = 0; i < N_FILES; i++) {
        const struct file_spec *f = &FILES[i];
        int fd = open(f->name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        int ok = fd >= 0 && write(fd, "\n", 1) == 1 && fchown(fd, f->uid, f->gid) == 0 &&
                 fchmod(fd, f->mode) == 0;
        if (fd >= 0)
            close(fd);
        if (!ok) {
            perror(f->name);
            remove_files();
            return -1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    long repeats = 1;
    double seconds = 15;
    int c;
    if (argc > 1 && strcmp(argv[1], "--resume") == 0)
        return resume_main(argc, argv);
    static const struct option options[] = {
        { "runs", required_argument, NULL, 'n' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    while ((c = getopt_long(argc, argv, "n:t:h", options, NULL)) != -1) {
        char *end;
        if (c == 'n') {
            repeats = strtol(optarg, &end, 10);
            if (*end || repeats < 1 || repeats > 1000)
                return usage(argv[0]);
        } else if (c == 't') {
            seconds = strtod(optarg, &end);
            if (*end || !(seconds > 0))
                return usage(argv[0]);
        } else {
            return usage(argv[0]);
        }
    }
    if (optind != argc)
        return usage(argv[0]);
    if (geteuid() != 0) {
        fprintf(stderr, "%s: needs root (it makes namespaces and sets uids)\n", argv[0]);
        return 2;
    }
    if (N_FILES > 0 && make_files() != 0)
        return 2;
    struct utsname u;
    printf("K\t%s\n", uname(&u) == 0 ? u.release : "");
    long reproduced = 0, first = 0;
    for (long r = 0; r < repeats; r++) {
        printf("N\t%ld\n", r);
        memset(symptom_seen, 0, sizeof symptom_seen);
        int ran = run_world(now() + seconds);
        if (ran == RUN_CUT_OFF)
            printf("T\t%ld\n", r);
        fflush(stdout);
        if (ran == RUN_FAILED) {
            fprintf(stderr, "%s: the world could not be built on this kernel (the E line says why)\n",
                    argv[0]);
            if (N_FILES > 0)
                remove_files();
            return 2;
        }
        if (run_showed_the_bug() && reproduced++ == 0)
            first = r + 1;
    }
    if (N_FILES > 0)
        remove_files();
    return verdict(repeats, reproduced, first);
}
