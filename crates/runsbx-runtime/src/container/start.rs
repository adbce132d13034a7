//! `start`: release a created init and wait for its report.

use libcontainer::container::{Container, ContainerStatus};

use super::lock::{CreateLock, LockFile};
use super::sidecar::read_hooks;
use super::{require, Owned, Runtime};
use crate::error::{Result, RuntimeError};
use crate::report::ReportReader;

impl Runtime {
    pub fn start(&self, id: &str) -> Result<()> {
        let mut c = self.load(id)?;
        // Stops: a start while the create is still running its prestart and
        // createRuntime hooks (state.json says `created` then, as the hooks
        // are told): the workload would run before they are done. A dead
        // create's lock file is left as found, for `delete` to find its
        // orphans by.
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
        self.start_loaded(&mut c)
    }

    /// `start` of the container this process just created.
    pub fn start_owned(&self, o: &mut Owned) -> Result<()> {
        self.start_loaded(&mut o.container)
    }

    fn start_loaded(&self, c: &mut Container) -> Result<()> {
        let id = c.id().to_string();
        let kept = self
            .reports
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id);
        let reader = match kept {
            Some(r) => Some(r),
            None => ReportReader::open(&self.dir(&id))?,
        };
        let poststart = read_hooks(&self.dir(&id)).poststart;
        c.start()
            .map_err(|e| RuntimeError::lc(format!("container {id:?}"), e))?;
        if let Some(reader) = reader {
            reader.wait()?;
        }
        // After the report: init has exec'd the workload (the runtime-spec's
        // "after the user-specified process is executed"). A failure is a
        // warning, and start succeeds.
        if !poststart.is_empty() {
            crate::hooks::run_warn("poststart", &poststart, &super::hook_state(c, "running"));
        }
        Ok(())
    }
}
