//! User namespaces and uid/gid idmaps (kernel/user_namespace.c).
