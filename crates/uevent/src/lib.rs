//! Network namespaces' uevent sockets (lib/kobject_uevent.c).
