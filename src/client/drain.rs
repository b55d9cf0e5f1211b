//! The client's observed drain, written once: what every loop around a
//! [`ClientSession`] does after each input (the hyper client shell, the
//! checker's world, the fuzz target). Transmits first (a request goes out
//! before the events it caused are acted on), then events, again until
//! neither has anything; each shown to the observer, as client `client`,
//! before `handle` gets it (with the observer, for what it observes
//! itself), and `handle` may feed the session again.

use super::{ClientEvent, ClientSession, ClientTransmit};
use crate::monitor::Observation;

/// One output of the client core.
#[derive(Clone, Debug)]
pub enum ClientOutput {
    /// Something for the wire: a request to send, an exchange to abort.
    Transmit(ClientTransmit),
    /// Something for the application.
    Event(ClientEvent),
}

impl ClientSession {
    /// Drains the session until it is quiet (see the module docs). Returns
    /// whether anything came out.
    pub fn drain_observed(
        &mut self,
        client: usize,
        observe: &mut dyn FnMut(&Observation),
        mut handle: impl FnMut(&mut ClientSession, ClientOutput, &mut dyn FnMut(&Observation)),
    ) -> bool {
        let mut any = false;
        loop {
            let mut progressed = false;
            // Each observed by reference, then moved on: no copy of a body.
            while let Some(transmit) = self.poll_transmit() {
                progressed = true;
                let o = Observation::ClientTransmit { client, transmit };
                observe(&o);
                if let Observation::ClientTransmit { transmit, .. } = o {
                    handle(self, ClientOutput::Transmit(transmit), observe);
                }
            }
            while let Some(event) = self.poll_event() {
                progressed = true;
                let o = Observation::ClientEvent { client, event };
                observe(&o);
                if let Observation::ClientEvent { event, .. } = o {
                    handle(self, ClientOutput::Event(event), observe);
                }
            }
            if !progressed {
                return any;
            }
            any = true;
        }
    }
}
