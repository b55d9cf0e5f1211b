//! The client's observed drain, written once: what every loop around a
//! [`ClientSession`] does after each input (the hyper client shell, the
//! checker's world, the fuzz target). Transmits first (a request goes out
//! before the events it caused are acted on), then events, again until
//! neither has anything; each shown to the observer, as client `client`,
//! before `handle` gets it (with the observer, for what it observes
//! itself), and `handle` may feed the session again.

use super::ClientSession;
use crate::client::{ClientEvent, ClientTransmit};
use crate::observe::Observation;

/// One output of the client core.
#[derive(Clone, Debug)]
pub enum ClientOutput {
    /// Something for the wire: a request to send, an exchange to abort.
    Transmit(ClientTransmit),
    /// Something for the application.
    Event(ClientEvent),
}

impl ClientOutput {
    /// Shows this output to `observe` as client `client`'s observation
    /// (`ClientTransmit` or `ClientEvent`), then gives it back: observed by
    /// reference, then moved on, with no copy of a body.
    pub fn observed(self, client: usize, observe: &mut dyn FnMut(&Observation)) -> Self {
        let o = match self {
            ClientOutput::Transmit(transmit) => Observation::ClientTransmit { client, transmit },
            ClientOutput::Event(event) => Observation::ClientEvent { client, event },
        };
        observe(&o);
        match o {
            Observation::ClientTransmit { transmit, .. } => ClientOutput::Transmit(transmit),
            Observation::ClientEvent { event, .. } => ClientOutput::Event(event),
            _ => unreachable!("built as one of the two just above"),
        }
    }
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
            while let Some(transmit) = self.poll_transmit() {
                progressed = true;
                let out = ClientOutput::Transmit(transmit).observed(client, observe);
                handle(self, out, observe);
            }
            while let Some(event) = self.poll_event() {
                progressed = true;
                let out = ClientOutput::Event(event).observed(client, observe);
                handle(self, out, observe);
            }
            if !progressed {
                return any;
            }
            any = true;
        }
    }
}
