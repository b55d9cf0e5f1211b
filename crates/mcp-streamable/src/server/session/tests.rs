//! The session's unit tests, by what they exercise.

mod adoption {
    use super::super::*;

    /// The first stream, request id and message key of adoption `a` on
    /// the instance whose streams start at `base`.
    fn firsts(base: u32, a: u32) -> (u32, i64, u64) {
        let config = SessionConfig {
            stream_id_base: base,
            ..SessionConfig::default()
        };
        let s = ServerSession::adopted(
            SessionId::from_bits(1),
            0,
            ProtocolVersion::LATEST,
            a,
            config,
            ServerPolicy::FIXED,
        );
        (s.streams.next_id(), s.outbound.next_number(), s.next_key)
    }

    #[test]
    fn each_adoption_starts_its_own_slice_of_the_instances_ranges() {
        let base = 3 * STREAM_ID_SPAN;
        let (r, k) = (request_id_base(base), key_base(base));
        assert_eq!(
            firsts(base, 0),
            (base + 1, r + 1, k + 1),
            "as a fresh session"
        );
        assert_eq!(
            firsts(base, 1),
            (base + 1 + 4096, r + 1 + (1 << 24), k + 1 + (1 << 44))
        );
        assert_eq!(
            firsts(base, 2),
            (base + 1 + 8192, r + 1 + (2 << 24), k + 1 + (2 << 44))
        );
        // The last slice still inside the instance's ranges (streams end at
        // base + STREAM_ID_SPAN − 2; requests and keys at the next
        // instance's bases), and the count comes round after it.
        let (stream, request, key) = firsts(base, ADOPTIONS_SPAN - 1);
        assert_eq!(stream, base + 1 + 255 * 4096);
        assert!(stream < base + STREAM_ID_SPAN - 2);
        assert!(request < request_id_base(base + STREAM_ID_SPAN));
        assert!(key < key_base(base + STREAM_ID_SPAN));
        assert_eq!(firsts(base, ADOPTIONS_SPAN), firsts(base, 0));
        assert_eq!(firsts(base, ADOPTIONS_SPAN + 1), firsts(base, 1));
    }
}

mod getters {
    use super::super::*;
    use crate::policy::EventIdScheme;

    /// A FIXED session of the latest session-era version whose event ids
    /// live in `namespace`.
    fn fresh(namespace: u32) -> ServerSession {
        ServerSession::new(
            SessionId::from_bits(u128::from(namespace) + 1),
            namespace,
            ProtocolVersion::LATEST,
            SessionConfig::default(),
            ServerPolicy::FIXED,
        )
    }

    /// A 2026-07-28 request's session keeps the endpoint's preset but numbers
    /// its events its own way: rmcp's schemes would give it a common
    /// stream, which nothing in that era can resume.
    #[test]
    fn a_stateless_session_keeps_its_preset_but_not_its_event_ids() {
        let preset = ServerPolicy::RMCP_0_16;
        assert_eq!(preset.event_ids, EventIdScheme::Rmcp016);
        let s =
            ServerSession::stateless(SessionId::from_bits(1), &SessionConfig::default(), preset);
        let want = ServerPolicy {
            event_ids: EventIdScheme::StreamScoped,
            ..preset
        };
        assert_ne!(want, ServerPolicy::default());
        assert_eq!(*s.policy(), want);
        assert_eq!(s.streams().count(), 0, "no common stream");
    }

    /// The idle-session figure's estimate: the struct and its id, then per
    /// stream its struct and 64 bytes per buffered event, per open exchange
    /// its struct and 16, per request in flight 48.
    #[test]
    fn the_size_estimate_weighs_each_part_as_documented() {
        use std::mem::size_of;
        let mut s = fresh(0);
        let base = s.approx_bytes();
        assert_eq!(base, size_of::<ServerSession>() + s.id().as_str().len());
        let sid = s.streams.open(Origin::Standalone);
        assert_eq!(sid, StreamId(1));
        let one_stream = s.approx_bytes();
        assert_eq!(one_stream - base, size_of::<Stream>());
        let bound = crate::server::stream::ReplayBound {
            events_max: 8,
            bytes_max: 1 << 20,
        };
        for key in 1..=2 {
            let out = Outgoing {
                session: s.id().clone(),
                key: MsgKey(key),
                cause: Cause::Unrelated,
                message: Message::notification("notifications/message", None),
            };
            s.streams
                .get_mut(&sid)
                .unwrap()
                .push(Some(Arc::new(out)), bound);
        }
        assert_eq!(s.approx_bytes() - one_stream, 2 * 64);
        let with_events = s.approx_bytes();
        for h in 1..=2 {
            let ex = Exchange {
                role: Role::Get {
                    stream: StreamId(1),
                },
                head_sent: true,
                ended: false,
            };
            s.exchanges.insert(HttpId(h), ex);
        }
        assert_eq!(
            s.approx_bytes() - with_events,
            2 * (size_of::<Exchange>() + 16)
        );
        let with_exchanges = s.approx_bytes();
        let flight = Flight {
            stream: StreamId(1),
            bytes: 10,
        };
        s.in_flight.insert(RequestId::Num(1), flight);
        s.in_flight.insert(RequestId::Num(2), flight);
        assert_eq!(s.approx_bytes() - with_exchanges, 2 * 48);
    }

    /// An application that negotiates by itself may set the version until
    /// the `initialize` answer, and only to a session-era one.
    #[test]
    fn a_version_is_agreed_before_the_answer_only() {
        let mut s = fresh(0);
        assert!(s.agree_version(ProtocolVersion::LATEST_V2026).is_err());
        assert_eq!(s.version(), ProtocolVersion::LATEST);
        assert_eq!(s.agree_version(ProtocolVersion::V2025_03_26), Ok(()));
        assert_eq!(s.version(), ProtocolVersion::V2025_03_26);
        s.phase = Phase::Ready;
        assert_eq!(
            s.agree_version(ProtocolVersion::V2025_06_18),
            Err(UsageError::AlreadyInitialized)
        );
        assert_eq!(s.version(), ProtocolVersion::V2025_03_26);
    }

    /// Drained and with nothing open, a session gives its queues' buffers
    /// back (what keeps an idle session small); with an exchange open it
    /// keeps them.
    #[test]
    fn an_idle_session_gives_its_buffers_back_once_drained() {
        let mut s = fresh(0);
        for _ in 0..4 {
            s.tx(HttpId(1), TransmitKind::Comment);
            s.events.push_back(ServerEvent::Dropped {
                key: MsgKey(1),
                reason: DropReason::NoStream,
            });
        }
        assert!(s.transmits.capacity() >= 4 && s.events.capacity() >= 4);
        while s.poll_transmit().is_some() {}
        while s.poll_event().is_some() {}
        assert_eq!((s.transmits.capacity(), s.events.capacity()), (0, 0));
        // With an exchange open, nothing is given back.
        let ex = Exchange {
            role: Role::Streamless { sse: true },
            head_sent: false,
            ended: false,
        };
        s.exchanges.insert(HttpId(2), ex);
        s.tx(HttpId(2), TransmitKind::Comment);
        while s.poll_transmit().is_some() {}
        assert!(s.transmits.capacity() > 0);
    }

    /// An event id renders in the session's namespace and parses back; the
    /// same text is nobody else's.
    #[test]
    fn event_ids_render_in_the_namespace_and_parse_back() {
        let s = fresh(0xab);
        let id = EventId {
            stream: StreamId(3),
            seq: 9,
        };
        let text = s.render_event_id(id);
        assert_eq!(text, "000000ab-3-9");
        assert_eq!(s.parse_event_id(&text), Some(id));
        let other = fresh(0xac);
        assert_eq!(other.parse_event_id(&text), None);
    }
}

mod routing {
    use super::super::*;
    use crate::ids::SessionId;
    use crate::policy::ServerPolicy;
    use crate::server::SessionConfig;
    use crate::version::ProtocolVersion;

    fn session(base: u32) -> ServerSession {
        let config = SessionConfig {
            stream_id_base: base,
            ..SessionConfig::default()
        };
        let id = SessionId::from_bits(1);
        ServerSession::new(id, 1, ProtocolVersion::LATEST, config, ServerPolicy::FIXED)
    }

    #[test]
    fn streams_are_numbered_in_the_session_range_and_start_over_at_its_end() {
        for base in [0, STREAM_ID_SPAN, u32::MAX - (STREAM_ID_SPAN - 1)] {
            let mut s = session(base);
            // `base + (SPAN − k)`, not `base + SPAN − k`: the last range
            // ends at u32::MAX, and the sum must not overflow on the way
            // (a debug build, as cargo-mutants runs, panics).
            assert_eq!(s.streams.open(Origin::Standalone), StreamId(base + 1));
            assert_eq!(s.streams.open(Origin::Standalone), StreamId(base + 2));
            s.streams.number_from(base + (STREAM_ID_SPAN - 3));
            assert_eq!(
                s.streams.open(Origin::Standalone),
                StreamId(base + (STREAM_ID_SPAN - 3))
            );
            assert_eq!(
                s.streams.open(Origin::Standalone),
                StreamId(base + (STREAM_ID_SPAN - 2)),
                "the range's last (its very last id is the fleet's)"
            );
            // base + 1 and base + 2 still live: skipped, not overwritten.
            assert_eq!(
                s.streams.open(Origin::Standalone),
                StreamId(base + 3),
                "then its first free id again"
            );
            assert_eq!(s.streams.len(), 5, "no live stream was replaced");
            s.streams.remove(&StreamId(base + 1));
            s.streams.number_from(base + (STREAM_ID_SPAN - 2));
            assert_eq!(s.streams.open(Origin::Standalone), StreamId(base + 1));
        }
    }

    #[test]
    fn after_the_range_wraps_the_oldest_stream_is_the_one_numbered_before_the_wrap() {
        for base in [0, STREAM_ID_SPAN] {
            let mut s = session(base);
            s.config.streams_max = 1;
            s.streams.number_from(base + (STREAM_ID_SPAN - 2));
            let old = s.streams.open(Origin::Standalone);
            let new = s.streams.open(Origin::Standalone);
            assert_eq!(
                (old, new),
                (StreamId(base + (STREAM_ID_SPAN - 2)), StreamId(base + 1))
            );
            let order: Vec<StreamId> = s
                .streams
                .oldest_first()
                .map(|st| st.id)
                .filter(|id| *id != COMMON)
                .collect();
            assert_eq!(order, [old, new]);
            // Both attached: unrelated messages go to the older one.
            for (sid, http) in [(old, 7), (new, 8)] {
                s.streams.get_mut(&sid).unwrap().attached = Some(HttpId(http));
            }
            assert_eq!(s.first_attached_standalone(), Some(old));
            // Both idle past `streams_max` 1: the older is forgotten.
            for sid in [old, new] {
                s.streams.get_mut(&sid).unwrap().attached = None;
            }
            s.trim_streams();
            assert!(s.streams.contains_key(&new) && !s.streams.contains_key(&old));
        }
    }
}
