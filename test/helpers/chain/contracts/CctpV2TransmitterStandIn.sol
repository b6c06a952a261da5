// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.20;

// The one Mailbox entry point the stand-in needs (IMailbox.sol in the hyperlane-xyz core package).
interface IMailbox {
    function dispatch(
        uint32 destinationDomain,
        bytes32 recipientAddress,
        bytes calldata messageBody
    ) external payable returns (bytes32 messageId);
}

/// @notice Test stand-in for a CCTP V2 MessageTransmitter together with the Hyperlane token
/// bridge that calls it. Per transfer it does what a real CCTP V2 transfer over Hyperlane leaves
/// in a receipt: first the transmitter's `MessageSent(bytes)` (a CCTP V2 message whose body is a
/// BurnMessageV2), then `Mailbox.dispatch` (Dispatch, DispatchId, hook events).
/// @dev Layouts follow circlefin/evm-cctp-contracts src/messages/v2/MessageV2.sol and
/// BurnMessageV2.sol; both `_formatMessageForRelay` functions are `abi.encodePacked` of these
/// fields, with the nonce, feeExecuted and expirationBlock left empty (zero) when sent.
/// The counts of MessageSent and Dispatch are parameters so tests can make them differ.
contract CctpV2TransmitterStandIn {
    /// Same signature as MessageTransmitterV2's event.
    event MessageSent(bytes message);

    /// MessageTransmitterV2 and TokenMessengerV2 are deployed with version 1 for both formats.
    uint32 public constant MESSAGE_VERSION = 1;
    uint32 public constant MESSAGE_BODY_VERSION = 1;
    /// CCTP V2 "standard" finality (fast transfers use 1000).
    uint32 public constant MIN_FINALITY_THRESHOLD = 2000;
    /// USDC on Ethereum, as the burn token: any 20-byte address would do.
    address public constant BURN_TOKEN = 0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48;

    IMailbox public immutable mailbox;
    /// CCTP domains are Circle's numbering, not Hyperlane's: 0 is Ethereum, 6 is Base.
    uint32 public immutable cctpLocalDomain;
    uint32 public immutable cctpRemoteDomain;
    /// The remote TokenMessengerV2 (the CCTP message's recipient).
    bytes32 public immutable remoteTokenMessenger;

    constructor(
        IMailbox _mailbox,
        uint32 _cctpLocalDomain,
        uint32 _cctpRemoteDomain,
        bytes32 _remoteTokenMessenger
    ) {
        mailbox = _mailbox;
        cctpLocalDomain = _cctpLocalDomain;
        cctpRemoteDomain = _cctpRemoteDomain;
        remoteTokenMessenger = _remoteTokenMessenger;
    }

    /// @notice Makes `max(burns, dispatches)` transfers of `amount`, `amount + 1`, ...: transfer i
    /// emits MessageSent when i < burns and dispatches to the Mailbox when i < dispatches.
    /// @return ids The Hyperlane message ids, in dispatch order.
    function send(
        uint32 destination,
        bytes32 recipient,
        uint256 amount,
        uint256 burns,
        uint256 dispatches
    ) public returns (bytes32[] memory ids) {
        ids = new bytes32[](dispatches);
        uint256 transfers = burns > dispatches ? burns : dispatches;
        for (uint256 i = 0; i < transfers; i++) {
            if (i < burns) {
                emit MessageSent(formatMessage(formatBurnMessage(recipient, amount + i)));
            }
            if (i < dispatches) {
                ids[i] = mailbox.dispatch(destination, recipient, formatTokenMessage(recipient, amount + i));
            }
        }
    }

    /// @notice Emits everything `send` would, then reverts: the node keeps none of it.
    function sendThenRevert(
        uint32 destination,
        bytes32 recipient,
        uint256 amount,
        uint256 burns,
        uint256 dispatches
    ) external {
        send(destination, recipient, amount, burns, dispatches);
        revert("stand-in: reverted after emitting");
    }

    /// MessageV2._formatMessageForRelay.
    function formatMessage(bytes memory body) public view returns (bytes memory) {
        return abi.encodePacked(
            MESSAGE_VERSION,
            cctpLocalDomain,
            cctpRemoteDomain,
            bytes32(0), // nonce: empty when sent, Circle assigns it
            bytes32(uint256(uint160(address(this)))), // sender: the local TokenMessenger
            remoteTokenMessenger, // recipient
            bytes32(0), // destinationCaller: anyone may receive
            MIN_FINALITY_THRESHOLD,
            uint32(0), // finalityThresholdExecuted: empty when sent
            body
        );
    }

    /// BurnMessageV2._formatMessageForRelay with no fee and no hook data.
    function formatBurnMessage(bytes32 mintRecipient, uint256 amount) public view returns (bytes memory) {
        return abi.encodePacked(
            MESSAGE_BODY_VERSION,
            bytes32(uint256(uint160(BURN_TOKEN))),
            mintRecipient,
            amount,
            bytes32(uint256(uint160(msg.sender))), // messageSender
            uint256(0), // maxFee
            uint256(0), // feeExecuted: empty when sent
            uint256(0), // expirationBlock: empty when sent
            bytes("") // hookData
        );
    }

    /// Hyperlane TokenMessage (recipient, amount): the body a warp route dispatches.
    function formatTokenMessage(bytes32 recipient, uint256 amount) public pure returns (bytes memory) {
        return abi.encodePacked(recipient, amount);
    }
}
