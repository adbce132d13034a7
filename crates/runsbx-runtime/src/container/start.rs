//! `start`: release a created init and wait for its report.

use libcontainer::container::{Container, ContainerStatus};
use libcontainer::oci_spec::runtime::Hook;

use super::lock::{CreateLock, LockFile};
use super::sidecar::read_hooks;
use super::{require, Owned, Runtime};
use crate::error::{Result, RuntimeError};
use crate::report::ReportReader;

impl Runtime {
    pub fn start(&self, id: &str) -> Result<()> {
        let mut c = self.load(id)?;
        // Stops: a start between libcontainer's `created` in state.json and
        // the end of create (loopback, disableOOMKiller, runsbx.json): the
        // workload would run before they are done. A dead create's lock file
        // is left as found, for `delete` to find its orphans by.
        match CreateLock::try_take_existing(&self.root, id)? {
            LockFile::Held => {
                return Err(RuntimeError::Busy {
                    id: id.to_string(),
                    action: "start",
                })
            }
            LockFile::Taken(mut lock) => lock.keep_if_left(),
            LockFile::Absent => {}
        }
        require(&c, "start", "created", |s| s == ContainerStatus::Created)?;
        let poststart = read_hooks(&self.dir(id)).poststart;
        self.start_loaded(&mut c, &poststart, None)
    }

    /// `start` of the container this process just created: its poststart
    /// hooks are the ones it recorded, not read back.
    pub fn start_owned(&self, o: &mut Owned) -> Result<()> {
        let poststart = std::mem::take(&mut o.poststart);
        let report = o.report.take();
        self.start_loaded(&mut o.container, &poststart, report)
    }

    fn start_loaded(
        &self,
        c: &mut Container,
        poststart: &[Hook],
        kept: Option<ReportReader>,
    ) -> Result<()> {
        let id = c.id().to_string();
        let reader = match kept {
            Some(r) => Some(r),
            None => ReportReader::open(&self.dir(&id))?,
        };
        c.start()
            .map_err(|e| RuntimeError::lc(format!("container {id:?}"), e))?;
        if let Some(reader) = reader {
            reader.wait()?;
        }
        // After the report: init has exec'd the workload (the runtime-spec's
        // "after the user-specified process is executed"). A failure is a
        // warning, and start succeeds.
        if !poststart.is_empty() {
            crate::hooks::run_warn("poststart", poststart, &super::hook_state(c, "running"));
        }
        Ok(())
    }
}
