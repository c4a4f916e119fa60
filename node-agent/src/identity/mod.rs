pub mod cgroup;
pub mod kube_api;
pub mod listening;
pub mod pod_metadata;
pub mod proc_info;
