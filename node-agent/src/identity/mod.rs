//! Who is at each end of what the capture sees: a process's command line (the kernel's copy, else
//! /proc) and container (`proc_info`), container and pod identity from cgroup paths (`cgroup`),
//! pod names, namespaces and labels from the cluster (`pod_metadata` over `kube_api`), and which
//! endpoints listen (`listening`), for sockets whose handshake the agent did not see; with
//! `--node-scope`, what belongs to the node when several share a kernel: its pod CIDRs
//! (`node_scope`) and its kubelet cgroup root (`node_cgroups`).
pub mod cgroup;
pub mod kube_api;
pub mod listening;
pub mod node_cgroups;
pub mod node_scope;
pub mod pod_metadata;
pub mod proc_info;
pub mod quantity;
